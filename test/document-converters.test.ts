import { describe, expect, it } from "vitest";
import { LibraryConverter } from "../src/adapters/library-converter";
import { pagedBlocks, WorkersAiConverter } from "../src/adapters/workers-ai-converter";
import { DocumentRejected } from "../src/errors";
import { CSV, DOCX, HTML, MARKDOWN, PDF } from "../src/shared/document-types";
import { makeDocx } from "./fixtures/make-docx";
import { makePdf } from "./fixtures/make-pdf";

// The conversion port's adapters on files made here: what each keeps (headings, pages, main content) and how each
// refuses what it cannot read. The tools' own tests (documents.test.ts) go through the routes.

const libraries = new LibraryConverter();
const convert = (bytes: Uint8Array, mimeType: string, maxPages = 100) =>
  libraries.convert({ bytes, mimeType, fileName: "file" }, { maxPages });
const text = (s: string) => new TextEncoder().encode(s);

describe("library converter", () => {
  it("a PDF with an outline: its entries are headings at their pages, the text keeps its page", async () => {
    const pdf = makePdf(
      [
        [{ text: "Kestrel Guide", size: 20 }, { text: "Welcome to the kestrel service." }],
        [{ text: "Install", size: 16 }, { text: "Run the installer on every node." }],
        [{ text: "Linux", size: 13 }, { text: "Use the apt repository on Debian." }],
      ],
      {
        title: "Kestrel handbook",
        outline: [
          {
            title: "Kestrel Guide",
            page: 1,
            children: [{ title: "Install", page: 2, children: [{ title: "Linux", page: 3 }] }],
          },
        ],
      },
    );
    const converted = await convert(pdf, PDF);
    expect(converted.title).toBe("Kestrel handbook");
    expect(converted.pages).toBe(3);
    expect(converted.blocks).toEqual([
      { kind: "heading", level: 1, text: "Kestrel Guide", page: 1 },
      { kind: "text", text: "Welcome to the kestrel service.", page: 1 },
      { kind: "heading", level: 2, text: "Install", page: 2 },
      { kind: "text", text: "Run the installer on every node.", page: 2 },
      { kind: "heading", level: 3, text: "Linux", page: 3 },
      { kind: "text", text: "Use the apt repository on Debian.", page: 3 },
    ]);
  });

  it("a PDF without an outline: larger short lines are headings, by size", async () => {
    const pdf = makePdf([
      [
        { text: "Pricing", size: 22 },
        { text: "Plans are billed monthly in euros." },
        { text: "Team plan", size: 15 },
        { text: "Ten seats and shared projects." },
      ],
      [{ text: "The team plan renews on the first day of the month." }],
    ]);
    const { blocks, pages, title } = await convert(pdf, PDF);
    expect(pages).toBe(2);
    expect(title).toBeNull();
    expect(blocks).toEqual([
      { kind: "heading", level: 1, text: "Pricing", page: 1 },
      { kind: "text", text: "Plans are billed monthly in euros.", page: 1 },
      { kind: "heading", level: 2, text: "Team plan", page: 1 },
      { kind: "text", text: "Ten seats and shared projects.", page: 1 },
      { kind: "text", text: "The team plan renews on the first day of the month.", page: 2 },
    ]);
  });

  it("a PDF's running header, footer and page numbers are not text; the same words inside a page are", async () => {
    const page = (n: number, body: string) => [
      { text: "Kestrel handbook - Confidential", size: 9 },
      { text: body },
      { text: "Every node reports to the Kestrel handbook - Confidential registry." },
      { text: "Reports arrive every minute." },
      { text: "Late ones are flagged." },
      { text: `Page ${n} of 4`, size: 9 },
    ];
    const pdf = makePdf([
      page(1, "Welcome to the kestrel service."),
      page(2, "Run the installer on every node."),
      page(3, "Use the apt repository on Debian."),
      page(4, "Call the on-call engineer."),
    ]);
    const { blocks } = await convert(pdf, PDF);
    const texts = blocks.map((b) => b.text).join("\n");
    expect(texts).not.toMatch(/^Kestrel handbook - Confidential$|Page \d of 4/m);
    expect(texts).toMatch(/Welcome to the kestrel service/);
    expect(texts).toMatch(/Call the on-call engineer/);
    expect(texts.match(/reports to the Kestrel handbook - Confidential registry/g)).toHaveLength(4);
    // Numbered headings at the top of their pages are content: their numbers are not the page's, and they are larger.
    const articles = await convert(
      makePdf(
        [1, 2, 3, 4].map((n) => [
          { text: `Article ${n + 4}`, size: n === 4 ? 11 : 14 },
          { text: `Clause ${n} binds both parties.` },
          { text: "Each party keeps a signed copy." },
          { text: "Notices go to the registered address." },
        ]),
      ),
      PDF,
    );
    expect(articles.blocks.map((b) => b.text).join("\n")).toMatch(
      /Article 5[\s\S]*Article 6[\s\S]*Article 7[\s\S]*Article 8/,
    );
    // Two pages are too few to tell a running header from a repeated heading; their page numbers still go.
    const short = await convert(
      makePdf([
        [{ text: "Release notes" }, { text: "Version 2 adds retries." }, { text: "- 1 -" }],
        [{ text: "Release notes" }, { text: "Version 3 adds quotas." }, { text: "2" }],
      ]),
      PDF,
    );
    expect(short.blocks.map((b) => b.text).join(" ")).toBe(
      "Release notes Version 2 adds retries. Release notes Version 3 adds quotas.",
    );
  });

  it("refuses an encrypted PDF, a broken one, one over the page limit and one without text, each saying why", async () => {
    const reason = async (bytes: Uint8Array, maxPages = 100) => {
      const error = await convert(bytes, PDF, maxPages).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DocumentRejected);
      return (error as DocumentRejected).message;
    };
    expect(await reason(makePdf([[{ text: "secret" }]], { encrypted: true }))).toMatch(/encrypted with a password/);
    expect(await reason(text("%PDF-1.4\nthis is not a pdf at all"))).toMatch(/could not be read/);
    expect(await reason(makePdf([[{ text: "a" }], [{ text: "b" }], [{ text: "c" }]]), 2)).toBe(
      "The PDF has 3 pages; the limit is 2",
    );
    expect(await reason(makePdf([[], []]))).toMatch(/OCR, which needs Workers AI/);
  });

  it("a Word file: its heading styles are sections", async () => {
    const docx = makeDocx([
      { heading: 1, text: "Runbook" },
      { text: "What to do when the pager goes off." },
      { heading: 2, text: "Database failover" },
      { text: "Promote the replica in the second region." },
    ]);
    const { blocks } = await convert(docx, DOCX);
    expect(blocks).toEqual([
      { kind: "heading", level: 1, text: "Runbook" },
      { kind: "text", text: "What to do when the pager goes off." },
      { kind: "heading", level: 2, text: "Database failover" },
      { kind: "text", text: "Promote the replica in the second region." },
    ]);
    const broken = await convert(text("PK\u0003\u0004 not really a zip"), DOCX).catch((e: unknown) => e);
    expect((broken as Error).message).toMatch(/Word file could not be read/);
  });

  it("a web page: its article stays, navigation, footer and cookie banner go", async () => {
    const paragraph = (n: number) =>
      `<p>Paragraph ${n} of the migration notes explains how the ledger service moves its tables to the new cluster without downtime, step by careful step.</p>`;
    const html = `<!doctype html><html><head><title>Ledger migration | Acme Blog</title></head><body>
      <nav><a href="/">Home</a><a href="/pricing">Pricing</a></nav>
      <div id="cookie-banner">We use cookies to improve your experience. Accept all cookies?</div>
      <article><h1>Ledger migration</h1>${paragraph(1)}<h2>Cutover</h2>${paragraph(2)}${paragraph(3)}</article>
      <footer>Copyright Acme. Imprint and privacy policy.</footer></body></html>`;
    const { blocks, title } = await convert(text(html), HTML);
    const all = blocks.map((b) => b.text).join("\n");
    expect(title).toMatch(/Ledger migration/);
    expect(all).toContain("Paragraph 3 of the migration notes");
    expect(blocks).toContainEqual({ kind: "heading", level: 2, text: "Cutover" });
    expect(all).not.toMatch(/cookies|Copyright|Pricing/);
  });

  it("a web page: an article's own header, section headings and notes stay; the page's header, sidebar and footer go", async () => {
    const para = (t: string) =>
      `<p>${t} ${"The service keeps working while the rollout proceeds in stages. ".repeat(3)}</p>`;
    const page = `<html><head><title>Rolling out the ingest worker | Acme Blog</title></head><body>
      <header class="site"><h1>Acme</h1><nav><a href="/">Home</a></nav></header>
      <main><article>
        <header><h1>Rolling out the ingest worker</h1></header>
        ${para("Intro.")}
        <section><header><h2>Install</h2></header>${para("Run the installer as root.")}</section>
        <aside class="note"><p>Note: the installer requires 2 GB of free disk space.</p></aside>
        <section><h2>Rollback</h2>${para("Promote the previous version.")}</section>
      </article></main>
      <aside class="sidebar"><p>Related posts and sidebar links</p></aside>
      <footer><p>Copyright Acme</p></footer></body></html>`;
    const { title, blocks } = await convert(text(page), HTML);
    expect(title).toBe("Rolling out the ingest worker");
    const headings = blocks.filter((b) => b.kind === "heading").map((b) => b.text);
    expect(headings).toEqual(["Rolling out the ingest worker", "Install", "Rollback"]);
    const all = blocks.map((b) => b.text).join("\n");
    expect(all).toMatch(/Note: the installer requires 2 GB of free disk space/);
    expect(all).not.toMatch(/Acme\n|sidebar links|Copyright|Home/);
  });

  it("a CSV: a block per row, each value named by its column", async () => {
    const { blocks } = await convert(text('city,price\nLyon,12\n"Saint-Étienne, Loire",9\n'), CSV);
    expect(blocks).toEqual([
      { kind: "text", text: "city: Lyon; price: 12" },
      { kind: "text", text: "city: Saint-Étienne, Loire; price: 9" },
    ]);
  });

  it("Markdown with front matter: its title names the document, its description leads, the rest is not text", async () => {
    const yaml = [
      "---",
      'title: "Deploying the ingest worker"',
      "description: How to roll out a new version without losing queued jobs. # shown in listings",
      "tags: [ops, deploy]",
      "date: 2024-03-01",
      "---",
      "",
      "## Rollout",
      "",
      "Drain the queue before the cutover.",
    ].join("\n");
    expect(await convert(text(yaml), MARKDOWN)).toEqual({
      title: "Deploying the ingest worker",
      pages: null,
      blocks: [
        { kind: "text", text: "How to roll out a new version without losing queued jobs." },
        { kind: "heading", level: 2, text: "Rollout" },
        { kind: "text", text: "Drain the queue before the cutover." },
      ],
    });
    // Hugo's TOML, and a one-field block a setext reading would have taken for a heading.
    const toml = await convert(text('+++\ntitle = "Runbook"\ndraft = false\n+++\nRestart it.'), MARKDOWN);
    expect(toml).toMatchObject({ title: "Runbook", blocks: [{ kind: "text", text: "Restart it." }] });
    const one = await convert(text("---\nlayout: post\n---\n# Notes\n\nText."), MARKDOWN);
    expect(one).toMatchObject({
      title: "Notes",
      blocks: [{ kind: "heading", level: 1, text: "Notes" }, { text: "Text." }],
    });
    // A description without a title: the file's own H1 still names it.
    const described = await convert(text("---\ndescription: Field notes.\n---\n# Notes\n\nText."), MARKDOWN);
    expect(described).toMatchObject({
      title: "Notes",
      blocks: [{ text: "Field notes." }, { text: "Notes" }, { text: "Text." }],
    });
    // A leading rule that closes nothing is Markdown, not front matter.
    const rule = await convert(text("---\nJust a note after a rule."), MARKDOWN);
    expect(rule.blocks).toEqual([{ kind: "text", text: "---\nJust a note after a rule." }]);
  });

  it("text saved as Latin-1, UTF-16 or with a declared charset reads as written, not as U+FFFD", async () => {
    // "Zoë paid 12 € in Sète": Windows-1252 (an older Excel's CSV), UTF-16LE with its BOM, and a page declaring ISO-8859-1.
    const latin1 = new Uint8Array([
      ...text("name,note\nZo"),
      0xeb,
      ...text(",paid 12 "),
      0x80,
      ...text(" in S"),
      0xe8,
      ...text("te\n"),
    ]);
    expect((await convert(latin1, CSV)).blocks).toEqual([{ kind: "text", text: "name: Zoë; note: paid 12 € in Sète" }]);
    const utf16 = new Uint8Array([0xff, 0xfe, ...[..."# Café\n\nCrème brûlée."].flatMap((c) => [c.charCodeAt(0), 0])]);
    expect(await convert(utf16, MARKDOWN)).toMatchObject({
      title: "Café",
      blocks: [
        { kind: "heading", text: "Café" },
        { kind: "text", text: "Crème brûlée." },
      ],
    });
    const page = new Uint8Array([
      ...text('<html><head><meta charset="iso-8859-1"><title>Caf'),
      0xe9,
      ...text("</title></head><body><article><h1>Men"),
      0xfc,
      ...text("</h1><p>Our kitchen serves cr"),
      0xe8,
      ...text("me br"),
      0xfb,
      ...text("l"),
      0xe9,
      ...text("e every day of the week, made fresh each morning by the pastry chef.</p></article></body></html>"),
    ]);
    const html = await convert(page, HTML);
    expect(JSON.stringify(html.blocks)).toMatch(/Menü.*crème brûlée every day/);
    expect(JSON.stringify(html.blocks)).not.toMatch(/\uFFFD/);
  });

  it("an image or an unknown type: a clear refusal", async () => {
    const image = await convert(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), "image/png").catch((e: unknown) => e);
    expect((image as Error).message).toBe(
      "image/png is an image: reading it needs OCR, which needs Workers AI (DOCUMENT_CONVERTER=workers-ai)",
    );
    const other = await convert(text("x"), "application/x-tar").catch((e: unknown) => e);
    expect((other as Error).message).toMatch(
      /^Unsupported document type application\/x-tar; supported: application\/pdf, /,
    );
  });
});

describe("Workers AI converter", () => {
  /** A stand-in for the AI binding's toMarkdown that records what it was sent and answers as the platform does. */
  const fakeAi = (answer: (name: string) => string) => {
    const sent: { name: string; type: string; options: unknown }[] = [];
    const ai = {
      toMarkdown: async (file: { name: string; blob: Blob }, options: unknown) => {
        sent.push({ name: file.name, type: file.blob.type, options });
        return {
          id: "1",
          name: file.name,
          mimeType: file.blob.type,
          format: "markdown",
          tokens: 10,
          data: answer(file.name),
        };
      },
    } as unknown as Ai;
    return { ai, sent };
  };

  it("sends scans, images and spreadsheets to toMarkdown, and PDFs with text to the library", async () => {
    const { ai, sent } = fakeAi(() => "## Page 1\n\nScanned words here.\n\n## Page 2\n\nMore scanned words.");
    const converter = new WorkersAiConverter(ai, libraries);
    const scanned = await converter.convert(
      { bytes: makePdf([[], []]), mimeType: PDF, fileName: "scan.pdf" },
      { maxPages: 10 },
    );
    expect(scanned.pages).toBe(2);
    expect(scanned.blocks).toEqual([
      { kind: "text", text: "Scanned words here.", page: 1 },
      { kind: "text", text: "More scanned words.", page: 2 },
    ]);
    await converter.convert(
      { bytes: new Uint8Array([1, 2]), mimeType: "image/png", fileName: "photo" },
      { maxPages: 10 },
    );
    expect(sent.map((s) => [s.name, s.type])).toEqual([
      ["scan.pdf", PDF],
      ["photo.png", "image/png"],
    ]);
    const withText = await converter.convert(
      { bytes: makePdf([[{ text: "Plain words." }]]), mimeType: PDF, fileName: "a.pdf" },
      { maxPages: 10 },
    );
    expect(withText.blocks).toEqual([{ kind: "text", text: "Plain words.", page: 1 }]);
    expect(sent).toHaveLength(2);
  });

  it("refuses a scan toMarkdown gives back without text, saying it does not OCR a PDF", async () => {
    // What the platform answers for a PDF of images: its metadata and page headings, no text.
    const { ai, sent } = fakeAi(
      () => "# scan.pdf\n## Metadata\n- PDFFormatVersion=1.4\n## Contents\n### Page 1\n### Page 2\n",
    );
    const converter = new WorkersAiConverter(ai, libraries);
    const refused = await converter
      .convert({ bytes: makePdf([[], []]), mimeType: PDF, fileName: "scan.pdf" }, { maxPages: 10 })
      .catch((e: unknown) => e);
    expect(sent).toHaveLength(1);
    expect(refused).toBeInstanceOf(DocumentRejected);
    expect((refused as DocumentRejected).message).toMatch(/no text layer \(a scan\?\).*without OCR/);
    expect((refused as DocumentRejected).details).toMatchObject({ needs_ocr: true });
  });

  it("drops toMarkdown's metadata section and reads its page headings as pages", () => {
    const markdown =
      "# report.pdf\n## Metadata\n- PDFFormatVersion=1.7\n- Title=Q3\n## Contents\n### Page 1\nRevenue grew.\n### Page 2\n## Outlook\nSteady.";
    expect(pagedBlocks(markdown)).toEqual({
      pages: 2,
      blocks: [
        { kind: "heading", level: 1, text: "report.pdf" },
        { kind: "text", text: "Revenue grew.", page: 1 },
        { kind: "heading", level: 2, text: "Outlook", page: 2 },
        { kind: "text", text: "Steady.", page: 2 },
      ],
    });
  });
});
