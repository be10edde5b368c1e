import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { makeDocx } from "./fixtures/make-docx";
import { makePdf } from "./fixtures/make-pdf";
import { admin, call, callTool, newKey, newTenant, tenantDb } from "./helpers";

// memory_ingest_document, memory_get_document and memory_delete_document through /jsonrpc, with files made here.

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const sentences = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => `Step ${i + 1} of ${topic} is written out here in full, with care.`).join(" ");

const GUIDE = [
  "# Guide",
  "This guide covers the kestrel service.",
  "## Install",
  "Install it with the package manager.",
  "### Linux",
  `On Debian use apt. ${sentences("the Linux install", 60)}`,
  "### macOS",
  "On macOS use Homebrew.",
].join("\n\n");

async function chunkRows(tenantId: string, documentId: string) {
  const db = await tenantDb(tenantId);
  const { results } = await db
    .prepare(
      `SELECT i.id, i.content, i.document_page AS page, i.document_section AS section, i.tokens, c.context
       FROM items i JOIN chunks c ON c.tenant_id = i.tenant_id AND c.item_id = i.id
       WHERE i.tenant_id = ? AND i.document_id = ? ORDER BY c.id`,
    )
    .bind(tenantId, documentId)
    .all<{ id: string; content: string; page: number | null; section: string; tokens: number; context: string }>();
  return results;
}

const errorOf = async (apiKey: string, args: Record<string, unknown>) => {
  const response = await callTool(apiKey, "memory_ingest_document", args);
  expect(response.error, JSON.stringify(response.result)).toBeDefined();
  return response.error!;
};

afterEach(() => vi.restoreAllMocks());

describe("memory_ingest_document", () => {
  it("Markdown: sections by heading path, chunks inside one section each, tokens counted, keyword-searchable at once", async () => {
    const t = await newTenant();
    const answer = await call(t.apiKey, "memory_ingest_document", { content: GUIDE, file_name: "guide.md" });
    expect(answer).toMatchObject({
      status: "ready",
      title: "Guide",
      mime_type: "text/markdown",
      pages: null,
      sections: 4,
      replaced: false,
      unchanged: false,
    });
    const rows = await chunkRows(t.tenantId, answer.document_id);
    expect(rows.length).toBe(answer.chunks);
    expect(answer.chunks).toBeGreaterThan(4);
    expect(rows.map((r) => r.section)).toContain("Guide > Install > Linux");
    // The long Linux section is cut into chunks of its own; the short macOS one is one chunk, never joined to Linux.
    const linux = rows.filter((r) => r.section === "Guide > Install > Linux");
    expect(linux.length).toBeGreaterThan(1);
    for (const r of linux) expect(r.content).not.toContain("Homebrew");
    expect(rows.filter((r) => r.content.includes("Homebrew")).map((r) => r.section)).toEqual([
      "Guide > Install > macOS",
    ]);
    expect(answer.tokens).toBe(rows.reduce((n, r) => n + r.tokens, 0));
    // Context carries the title and section path, so the headings find a chunk whose text does not name them.
    expect(linux[1]!.context).toBe("Guide\nGuide > Install > Linux");
    const hits = await call(t.apiKey, "search", { query: "Homebrew" });
    expect(hits.results[0].content).toContain("Homebrew");
  });

  it("drops control characters a converter leaves (a PDF's broken glyphs come out as NUL), and text made only of them", async () => {
    const t = await newTenant();
    const content = "# Runbook\u0000\n\nRestart\u0000 the worker\u0007.\n\n\u0000\u0001\n\nThen\tcheck the queue.";
    const answer = await call(t.apiKey, "memory_ingest_document", { content });
    expect(answer).toMatchObject({ title: "Runbook", sections: 1 });
    const rows = await chunkRows(t.tenantId, answer.document_id);
    expect(rows.map((r) => r.content)).toEqual(["Restart the worker.\n\nThen\tcheck the queue."]);
  });

  it("PDF: each chunk cites its page and outline section; the original and the Markdown are kept in R2", async () => {
    const t = await newTenant();
    const pdf = makePdf(
      [
        [{ text: "Contract", size: 20 }, { text: "This agreement is made between Acme and Kestrel." }],
        [{ text: "Payment terms", size: 15 }, { text: "Invoices are due within thirty days of receipt." }],
        [{ text: "Termination", size: 15 }, { text: "Either party may end the agreement with ninety days notice." }],
      ],
      {
        title: "Master services agreement",
        outline: [
          {
            title: "Contract",
            page: 1,
            children: [
              { title: "Payment terms", page: 2 },
              { title: "Termination", page: 3 },
            ],
          },
        ],
      },
    );
    const answer = await call(t.apiKey, "memory_ingest_document", {
      content_base64: base64(pdf),
      file_name: "msa.pdf",
    });
    expect(answer).toMatchObject({
      title: "Master services agreement",
      mime_type: "application/pdf",
      pages: 3,
      sections: 3,
    });
    const rows = await chunkRows(t.tenantId, answer.document_id);
    expect(rows.map((r) => [r.section, r.page, r.content])).toEqual([
      ["Contract", 1, "This agreement is made between Acme and Kestrel."],
      ["Contract > Payment terms", 2, "Invoices are due within thirty days of receipt."],
      ["Contract > Termination", 3, "Either party may end the agreement with ninety days notice."],
    ]);
    const got = await call(t.apiKey, "memory_get_document", {
      document_id: answer.document_id,
      include_markdown: true,
    });
    expect(got).toMatchObject({
      status: "ready",
      file_name: "msa.pdf",
      bytes: pdf.byteLength,
      sections: [
        { section: "Contract", page: 1, chunks: 1 },
        { section: "Contract > Payment terms", page: 2, chunks: 1 },
        { section: "Contract > Termination", page: 3, chunks: 1 },
      ],
    });
    expect(got.markdown).toContain("## Payment terms\n\nInvoices are due within thirty days of receipt.");
    const original = await env.DOCUMENTS.get(`${t.tenantId}/${answer.document_id}/${got.sha256}`);
    expect(new Uint8Array(await original!.arrayBuffer())).toEqual(pdf);
  });

  it("Word: heading styles become sections", async () => {
    const t = await newTenant();
    const docx = makeDocx([
      { heading: 1, text: "Runbook" },
      { text: "Pager duty basics." },
      { heading: 2, text: "Failover" },
      { text: "Promote the replica in the second region." },
    ]);
    const answer = await call(t.apiKey, "memory_ingest_document", {
      content_base64: base64(docx),
      file_name: "runbook.docx",
    });
    expect(answer.mime_type).toBe("application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    const rows = await chunkRows(t.tenantId, answer.document_id);
    expect(rows.map((r) => [r.section, r.content])).toEqual([
      ["Runbook", "Pager duty basics."],
      ["Runbook > Failover", "Promote the replica in the second region."],
    ]);
  });

  it("other names of the types read here: x-markdown, XHTML, TSV, JSON and any text/* are read, not refused", async () => {
    const t = await newTenant();
    const ingest = (args: Record<string, unknown>) => call(t.apiKey, "memory_ingest_document", args);
    const cases: [Record<string, unknown>, string, [string, string][]][] = [
      [
        { content: "# Notes\n\nKeep it short.", mime_type: "text/x-markdown; charset=utf-8" },
        "text/markdown",
        [["Notes", "Keep it short."]],
      ],
      [{ content: "city\tprice\nLyon\t12\n", file_name: "prices.tsv" }, "text/csv", [["", "city: Lyon; price: 12"]]],
      [
        { content: '{"service": "ingest", "replicas": 3}', mime_type: "application/json" },
        "text/plain",
        [["", '{"service": "ingest", "replicas": 3}']],
      ],
      [
        { content: "12:00 ingest restarted after OOM", mime_type: "text/x-log" },
        "text/plain",
        [["", "12:00 ingest restarted after OOM"]],
      ],
    ];
    for (const [args, type, chunks] of cases) {
      const answer = await ingest(args);
      expect(answer.mime_type, JSON.stringify(args)).toBe(type);
      const rows = await chunkRows(t.tenantId, answer.document_id);
      expect(rows.map((r) => [r.section, r.content])).toEqual(chunks);
    }
  });

  it("document_key: the same bytes do no work; new bytes replace the chunks and the original under the same id", async () => {
    const t = await newTenant();
    const first = await call(t.apiKey, "memory_ingest_document", {
      content: "# Prices\n\nTea costs 3 euros.",
      document_key: "prices",
    });
    const again = await call(t.apiKey, "memory_ingest_document", {
      content: "# Prices\n\nTea costs 3 euros.",
      document_key: "prices",
    });
    expect(again).toMatchObject({ document_id: first.document_id, unchanged: true, replaced: false, chunks: 1 });
    const before = await call(t.apiKey, "memory_get_document", { document_id: first.document_id });
    const replaced = await call(t.apiKey, "memory_ingest_document", {
      content: "# Prices\n\nTea costs 4 euros.\n\n## Coffee\n\nCoffee costs 5 euros.",
      document_key: "prices",
    });
    expect(replaced).toMatchObject({ document_id: first.document_id, replaced: true, unchanged: false, chunks: 2 });
    const rows = await chunkRows(t.tenantId, first.document_id);
    expect(rows.map((r) => r.content)).toEqual(["Tea costs 4 euros.", "Coffee costs 5 euros."]);
    expect((await call(t.apiKey, "search", { query: "tea 3 euros" })).results.map((r: any) => r.content)).not.toContain(
      "Tea costs 3 euros.",
    );
    expect(await env.DOCUMENTS.head(`${t.tenantId}/${first.document_id}/${before.sha256}`)).toBeNull();
    // The same text under another key (or none) is another document.
    const other = await call(t.apiKey, "memory_ingest_document", { content: "# Prices\n\nTea costs 4 euros." });
    expect(other.document_id).not.toBe(first.document_id);
  });

  it("memory_delete_document removes chunks, vectors, links and R2 objects; project-limited keys see only their projects", async () => {
    const t = await newTenant();
    const answer = await call(t.apiKey, "memory_ingest_document", { content: GUIDE, project_id: "docs" });
    const got = await call(t.apiKey, "memory_get_document", { document_id: answer.document_id });
    // A key limited to another project finds no such document, and cannot ingest into this one.
    const { apiKey: limited } = await newKey(t.tenantId, { projects: ["other"] });
    const hidden = await callTool(limited, "memory_get_document", { document_id: answer.document_id });
    expect(hidden.error?.data?.code).toBe("NOT_FOUND");
    expect(
      (await callTool(limited, "memory_delete_document", { document_id: answer.document_id })).error,
    ).toBeDefined();
    const refused = await callTool(limited, "memory_ingest_document", { content: "# x\n\ny", project_id: "docs" });
    expect(refused.error?.message).toMatch(/may not touch project 'docs'/);

    const db = await tenantDb(t.tenantId);
    const deleted = await call(t.apiKey, "memory_delete_document", { document_id: answer.document_id });
    expect(deleted).toEqual({ document_id: answer.document_id, deleted: true, chunks: answer.chunks });
    const count = async (sql: string) => (await db.prepare(sql).bind(t.tenantId).first<{ n: number }>())!.n;
    expect(await count("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ?")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM local_vectors WHERE tenant_id = ?")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM documents WHERE tenant_id = ?")).toBe(0);
    expect((await env.DOCUMENTS.list({ prefix: `${t.tenantId}/` })).objects).toEqual([]);
    expect(got.sha256).toMatch(/^[0-9a-f]{64}$/);
    const again = await callTool(t.apiKey, "memory_get_document", { document_id: answer.document_id });
    expect(again.error?.message).toMatch(/No document/);
  });
});

describe("memory_ingest_document refuses bad input, naming the parameter and the limit, and stores nothing", () => {
  const nothingStored = async (tenantId: string) => {
    const db = await tenantDb(tenantId);
    expect(
      (await db.prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>())!
        .n,
    ).toBe(0);
    expect(
      (await db
        .prepare("SELECT COUNT(*) AS n FROM documents WHERE tenant_id = ?")
        .bind(tenantId)
        .first<{ n: number }>())!.n,
    ).toBe(0);
    expect((await env.DOCUMENTS.list({ prefix: `${tenantId}/` })).objects).toEqual([]);
  };

  it("more than one source, none, empty content, an unsupported type, an encrypted or broken PDF", async () => {
    const t = await newTenant();
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [
        { content: "a", url: "https://example.com/" },
        "content",
        /exactly one of url, content or content_base64, not url and content/,
      ],
      [{}, "url", /Give one of url, content or content_base64/],
      [{ content: "   \n " }, "content", /content is empty/],
      [{ content_base64: "" }, "content_base64", /content_base64 is empty/],
      [{ content_base64: "!!!" }, "content_base64", /not valid base64/],
      [
        { content_base64: base64(new Uint8Array([1, 2, 3])), mime_type: "application/x-tar" },
        "content_base64",
        /Unsupported document type application\/x-tar; supported: application\/pdf/,
      ],
      [
        { content_base64: base64(makePdf([[{ text: "secret" }]], { encrypted: true })) },
        "content_base64",
        /encrypted with a password/,
      ],
      [
        { content_base64: base64(new TextEncoder().encode("%PDF-1.7\nbroken")) },
        "content_base64",
        /PDF could not be read/,
      ],
      [{ content_base64: base64(makePdf([[], []])) }, "content_base64", /OCR, which needs Workers AI/],
      [
        { content_base64: base64(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a])) },
        "content_base64",
        /image\/png is an image: reading it needs OCR/,
      ],
    ];
    for (const [args, parameter, message] of cases) {
      const error = await errorOf(t.apiKey, args);
      expect(error.message, JSON.stringify(args).slice(0, 80)).toMatch(message);
      expect(error.data?.code, error.message).toBe("INVALID_PARAMETER");
      expect(error.data?.details?.parameter, error.message).toBe(parameter);
    }
    await nothingStored(t.tenantId);
  });
});

describe("a document's chunks cite their place wherever they are read", () => {
  it("search, memory_get, memory_list and memory_context_build carry document {id, title, file, url, type, page, section}", async () => {
    const t = await newTenant();
    const pdf = makePdf(
      [
        [{ text: "Handbook", size: 20 }, { text: "Welcome aboard." }],
        [{ text: "Expenses", size: 15 }, { text: "Receipts for travel expenses are filed within a fortnight." }],
      ],
      {
        title: "Staff handbook",
        outline: [{ title: "Handbook", page: 1, children: [{ title: "Expenses", page: 2 }] }],
      },
    );
    const answer = await call(t.apiKey, "memory_ingest_document", {
      content_base64: base64(pdf),
      file_name: "handbook.pdf",
    });
    await call(t.apiKey, "memory_store", { content: "Travel receipts from my own trip are in the blue folder." });
    const expected = {
      document_id: answer.document_id,
      title: "Staff handbook",
      file_name: "handbook.pdf",
      url: null,
      mime_type: "application/pdf",
      page: 2,
      section: "Handbook > Expenses",
    };
    const hits = (await call(t.apiKey, "search", { query: "receipts travel expenses fortnight" })).results;
    const hit = hits.find((h: { content: string }) => h.content.includes("fortnight"));
    expect(hit.document).toEqual(expected);
    const plain = (await call(t.apiKey, "search", { query: "blue folder" })).results[0];
    expect(plain).toBeDefined();
    expect(plain.document).toBeUndefined();
    expect((await call(t.apiKey, "memory_get", { id: hit.item_id })).document).toEqual(expected);
    const listed = (await call(t.apiKey, "memory_list", {})).memories;
    expect(listed.find((m: { id: string }) => m.id === hit.item_id).document).toEqual(expected);
    expect(listed.find((m: { preview: string }) => m.preview.includes("blue folder")).document).toBeUndefined();
    const context = await call(t.apiKey, "memory_context_build", {
      query: "travel expenses fortnight",
      token_budget: 2000,
    });
    expect(context.memories.find((m: { id: string }) => m.id === hit.item_id)?.document).toEqual(expected);
  });
});

describe("deleting a project or a tenant removes its documents", () => {
  it("rows, chunks and R2 objects of the project's documents go; the other project's stay; then the tenant's", async () => {
    const t = await newTenant();
    const doomed = await call(t.apiKey, "memory_ingest_document", { content: GUIDE, project_id: "doomed" });
    const kept = await call(t.apiKey, "memory_ingest_document", {
      content: "# Kept\n\nThis one stays.",
      project_id: "kept",
    });
    const db = await tenantDb(t.tenantId);
    const documents = async () =>
      (
        await db
          .prepare("SELECT id FROM documents WHERE tenant_id = ? ORDER BY id")
          .bind(t.tenantId)
          .all<{ id: string }>()
      ).results.map((r) => r.id);
    const objects = async (documentId: string) =>
      (await env.DOCUMENTS.list({ prefix: `${t.tenantId}/${documentId}/` })).objects.length;
    expect(await objects(doomed.document_id)).toBe(2);

    expect((await admin("DELETE", `/tenants/${t.tenantId}/projects/doomed`)).status).toBe(202);
    await expect.poll(documents, { timeout: 20_000, interval: 100 }).toEqual([kept.document_id]);
    expect(await objects(doomed.document_id)).toBe(0);
    expect(await objects(kept.document_id)).toBe(2);
    const left = await db
      .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND document_id = ?")
      .bind(t.tenantId, doomed.document_id)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);

    expect((await admin("DELETE", `/tenants/${t.tenantId}`)).status).toBe(202);
    await expect
      .poll(async () => (await env.DOCUMENTS.list({ prefix: `${t.tenantId}/` })).objects.length, {
        timeout: 20_000,
        interval: 100,
      })
      .toBe(0);
    await expect.poll(documents, { timeout: 20_000, interval: 100 }).toEqual([]);
  }, 60_000);
});
