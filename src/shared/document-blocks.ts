/**
 * A converted document as an ordered list of blocks: what every converter answers (src/adapters/document-*.ts)
 * and what sectioning reads (src/core/documents/sections.ts). Headings open sections; text belongs to the
 * innermost heading before it. `page` is 1-based, for formats that have pages (PDF); absent otherwise.
 */
export type DocumentBlock =
  | { kind: "heading"; level: number; text: string; page?: number }
  | { kind: "text"; text: string; page?: number };

/** An ATX heading line ("## Install", "# Title #"). */
const ATX_HEADING = /^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/;
/** A setext underline: "===" makes the line above an H1, "---" an H2. */
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
/** A fenced code block's fence: a "# comment" inside one is not a heading. */
const FENCE = /^ {0,3}(```|~~~)/;

/**
 * Markdown to blocks: ATX and setext headings (outside fenced code) become headings, the text between them a
 * text block per paragraph (blank-line separated; a fenced block stays one paragraph). `page` is given to every block.
 */
export function markdownBlocks(markdown: string, page?: number): DocumentBlock[] {
  const blocks: DocumentBlock[] = [];
  const at = page === undefined ? {} : { page };
  let paragraph: string[] = [];
  let fenced = false;
  const flush = () => {
    const text = paragraph.join("\n").trim();
    if (text) blocks.push({ kind: "text", text, ...at });
    paragraph = [];
  };
  for (const line of markdown.replace(/\r\n?/g, "\n").split("\n")) {
    if (FENCE.test(line)) {
      if (!fenced) flush();
      fenced = !fenced;
      paragraph.push(line);
      if (!fenced) flush();
      continue;
    }
    if (fenced) {
      paragraph.push(line);
      continue;
    }
    const atx = ATX_HEADING.exec(line);
    if (atx) {
      flush();
      const text = cleanHeading(atx[2]!);
      if (text) blocks.push({ kind: "heading", level: atx[1]!.length, text, ...at });
      continue;
    }
    const setext = SETEXT.exec(line);
    if (setext && paragraph.length === 1 && paragraph[0]!.trim() && !/^\s*[-*+]\s/.test(paragraph[0]!)) {
      const text = cleanHeading(paragraph[0]!);
      paragraph = [];
      if (text) blocks.push({ kind: "heading", level: setext[1]!.startsWith("=") ? 1 : 2, text, ...at });
      continue;
    }
    if (line.trim() === "") flush();
    else paragraph.push(line);
  }
  flush();
  return blocks;
}

/** The most heading text kept: a heading is a title, not a paragraph. */
export const MAX_HEADING_CHARS = 200;

/** A heading's words without Markdown emphasis, links' targets or runs of spaces. */
export function cleanHeading(raw: string): string {
  return raw
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[*_`]+/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, MAX_HEADING_CHARS);
}

/** Blocks back to Markdown (what memory_get_document's include_markdown shows). */
export function blocksToMarkdown(blocks: readonly DocumentBlock[]): string {
  return blocks.map((b) => (b.kind === "heading" ? `${"#".repeat(b.level)} ${b.text}` : b.text)).join("\n\n");
}

/** Control characters other than tab and line breaks: a PDF's broken glyphs come out as NUL and the like. */
const CONTROL = /(?![\t\n\r])\p{Cc}/gu;

/** The text without control characters other than tab and line breaks. */
export function withoutControls(text: string): string {
  return text.replace(CONTROL, "");
}

/** The blocks without control characters in their text, and without a block left empty by that. */
export function printableBlocks(blocks: readonly DocumentBlock[]): DocumentBlock[] {
  return blocks
    .map((block) => ({ ...block, text: withoutControls(block.text) }))
    .filter((block) => block.text.trim() !== "");
}
