import { DocumentRejected } from "../errors";
import type { ConvertedDocument } from "../ports";
import { cleanHeading, type DocumentBlock } from "../shared/document-blocks";
import { withoutRunningLines } from "./pdf-running-lines";

// PDF with unpdf (PDF.js's serverless build): each page's text with its font sizes, and the outline. Loaded on first
// use, so a Worker that never reads a PDF never evaluates PDF.js (startup stays small).

type PdfDocument = Awaited<ReturnType<typeof import("unpdf")["getDocumentProxy"]>>;

/** A line of a page: its text and its largest font size. */
interface PageLine {
  text: string;
  size: number;
}

/** A line this much larger than the body text (and short) reads as a heading where the PDF has no outline. */
const HEADING_SIZE_RATIO = 1.15;
const MAX_HEADING_LINE_CHARS = 150;

export async function convertPdf(bytes: Uint8Array, maxPages: number): Promise<ConvertedDocument> {
  const { getDocumentProxy } = await import("unpdf");
  let pdf: PdfDocument;
  try {
    // PDF.js takes ownership of the buffer it is given: give it a copy.
    pdf = await getDocumentProxy(bytes.slice(), { stopAtErrors: true, disableFontFace: true });
  } catch (error) {
    throw pdfError(error);
  }
  try {
    if (pdf.numPages > maxPages)
      throw new DocumentRejected(`The PDF has ${pdf.numPages} pages; the limit is ${maxPages}`, {
        pages: pdf.numPages,
        limit: maxPages,
      });
    const pages: PageLine[][] = [];
    for (let number = 1; number <= pdf.numPages; number++) pages.push(await pageLines(pdf, number));
    if (pages.every((lines) => lines.every((l) => l.text.trim() === ""))) {
      throw new DocumentRejected(
        "The PDF has no text layer (a scan or images): reading it needs OCR, which needs Workers AI (DOCUMENT_CONVERTER=workers-ai)",
        { needs_ocr: true },
      );
    }
    const outline = await outlineByPage(pdf);
    const content = withoutRunningLines(pages);
    const blocks = outline.length > 0 ? blocksWithOutline(content, outline) : blocksByFontSize(content);
    return { title: await pdfTitle(pdf), pages: pdf.numPages, blocks };
  } catch (error) {
    throw error instanceof DocumentRejected ? error : pdfError(error);
  } finally {
    await pdf.loadingTask.destroy();
  }
}

function pdfError(error: unknown): DocumentRejected {
  const name = (error as { name?: string } | null)?.name ?? "";
  if (name === "PasswordException")
    return new DocumentRejected("The PDF is encrypted with a password; send it without the password", {
      encrypted: true,
    });
  const message = error instanceof Error ? error.message : String(error);
  return new DocumentRejected(`The PDF could not be read (broken or not a PDF): ${message}`, { broken: true });
}

async function pageLines(pdf: PdfDocument, number: number): Promise<PageLine[]> {
  const page = await pdf.getPage(number);
  const content = await page.getTextContent();
  const lines: PageLine[] = [];
  let text = "";
  let size = 0;
  for (const item of content.items) {
    if (!("str" in item)) continue;
    text += item.str;
    if (item.str.trim()) size = Math.max(size, Math.hypot(item.transform[2] ?? 0, item.transform[3] ?? 0));
    if (item.hasEOL) {
      lines.push({ text, size });
      text = "";
      size = 0;
    }
  }
  if (text) lines.push({ text, size });
  page.cleanup();
  return lines.filter((l) => l.text.trim() !== "");
}

/** The document's title from its metadata, when it has one. */
async function pdfTitle(pdf: PdfDocument): Promise<string | null> {
  try {
    const { info } = await pdf.getMetadata();
    const title = (info as { Title?: unknown } | undefined)?.Title;
    return typeof title === "string" && title.trim() ? title.trim() : null;
  } catch {
    return null;
  }
}

interface OutlineEntry {
  title: string;
  level: number;
  /** 1-based; entries whose destination cannot be resolved are left out. */
  page: number;
}

/** The outline flattened in reading order, each entry with its level and page. */
async function outlineByPage(pdf: PdfDocument): Promise<OutlineEntry[]> {
  const outline = await pdf.getOutline().catch(() => null);
  if (!outline) return [];
  const entries: OutlineEntry[] = [];
  type Node = { title: string; dest: string | unknown[] | null; items: Node[] };
  const walk = async (nodes: Node[], level: number) => {
    for (const node of nodes) {
      const page = await destinationPage(pdf, node.dest);
      const title = cleanHeading(node.title ?? "");
      if (page !== null && title) entries.push({ title, level: Math.min(level, 6), page });
      if (node.items?.length) await walk(node.items, level + 1);
    }
  };
  await walk(outline as Node[], 1);
  return entries;
}

async function destinationPage(pdf: PdfDocument, dest: string | unknown[] | null): Promise<number | null> {
  try {
    const explicit = typeof dest === "string" ? await pdf.getDestination(dest) : dest;
    const ref = explicit?.[0];
    if (ref === undefined || ref === null) return null;
    const index =
      typeof ref === "number" ? ref : await pdf.getPageIndex(ref as Parameters<PdfDocument["getPageIndex"]>[0]);
    return index + 1;
  } catch {
    return null;
  }
}

const normalized = (text: string) => text.replace(/\s+/g, " ").trim().toLowerCase();

/**
 * Headings from the outline: an entry's heading goes where its title stands on its page (that line becomes the
 * heading), or at the top of its page when the title is not found there. The text between is the sections' text.
 */
function blocksWithOutline(pages: PageLine[][], outline: OutlineEntry[]): DocumentBlock[] {
  const blocks: DocumentBlock[] = [];
  let next = 0;
  pages.forEach((lines, i) => {
    const page = i + 1;
    const body: string[] = [];
    const flushBody = () => {
      const text = joinLines(body);
      if (text) blocks.push({ kind: "text", text, page });
      body.length = 0;
    };
    // Entries pointing at earlier pages than this one that were never placed go first.
    while (next < outline.length && outline[next]!.page < page) {
      const entry = outline[next++]!;
      blocks.push({ kind: "heading", level: entry.level, text: entry.title, page });
    }
    for (const line of lines) {
      const entry = outline[next];
      if (entry && entry.page === page && normalized(line.text) === normalized(entry.title)) {
        flushBody();
        blocks.push({ kind: "heading", level: entry.level, text: entry.title, page });
        next++;
        continue;
      }
      // An entry of this page whose title is not a line of it: its heading opens the page.
      if (
        entry &&
        entry.page === page &&
        body.length === 0 &&
        !lines.some((l) => normalized(l.text) === normalized(entry.title))
      ) {
        blocks.push({ kind: "heading", level: entry.level, text: entry.title, page });
        next++;
      }
      body.push(line.text);
    }
    flushBody();
  });
  for (; next < outline.length; next++) {
    const entry = outline[next]!;
    blocks.push({ kind: "heading", level: entry.level, text: entry.title, page: entry.page });
  }
  return blocks;
}

/**
 * Without an outline: short lines set clearly larger than the body text are headings, the largest size level 1.
 * The body size is the size most characters are set in.
 */
function blocksByFontSize(pages: PageLine[][]): DocumentBlock[] {
  const charsBySize = new Map<number, number>();
  for (const line of pages.flat()) {
    const size = Math.round(line.size * 10) / 10;
    charsBySize.set(size, (charsBySize.get(size) ?? 0) + line.text.length);
  }
  const body = [...charsBySize.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
  const isHeading = (line: PageLine) =>
    body > 0 &&
    line.size >= body * HEADING_SIZE_RATIO &&
    line.text.trim().length <= MAX_HEADING_LINE_CHARS &&
    /\p{L}/u.test(line.text);
  const headingSizes = [
    ...new Set(
      pages
        .flat()
        .filter(isHeading)
        .map((l) => Math.round(l.size * 10) / 10),
    ),
  ].sort((a, b) => b - a);
  const blocks: DocumentBlock[] = [];
  pages.forEach((lines, i) => {
    const page = i + 1;
    const text: string[] = [];
    const flush = () => {
      const joined = joinLines(text);
      if (joined) blocks.push({ kind: "text", text: joined, page });
      text.length = 0;
    };
    for (const line of lines) {
      if (isHeading(line)) {
        flush();
        const level = Math.min(headingSizes.indexOf(Math.round(line.size * 10) / 10) + 1, 6);
        const heading = cleanHeading(line.text);
        if (heading) blocks.push({ kind: "heading", level, text: heading, page });
      } else text.push(line.text);
    }
    flush();
  });
  return blocks;
}

/** A page's lines as running text: a word hyphenated at a line's end is joined again. */
function joinLines(lines: readonly string[]): string {
  let text = "";
  for (const raw of lines) {
    const line = raw.trim();
    if (!line) continue;
    if (!text) text = line;
    else if (/\p{L}-$/u.test(text)) text = text.slice(0, -1) + line;
    else text += ` ${line}`;
  }
  return text;
}
