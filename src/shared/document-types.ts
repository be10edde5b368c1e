/** The document types ingestion knows, by MIME type, and how a file's type is told from its bytes and name. */

export const PDF = "application/pdf";
export const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
export const HTML = "text/html";
export const MARKDOWN = "text/markdown";
export const PLAIN = "text/plain";
export const CSV = "text/csv";

/** Converted by the libraries, locally and in production (src/adapters/library-converter.ts). */
export const LIBRARY_TYPES = [PDF, DOCX, HTML, MARKDOWN, PLAIN, CSV] as const;

/** Converted only by Workers AI's toMarkdown: images (OCR and description), spreadsheets, OpenDocument, XML. */
export const WORKERS_AI_TYPES = [
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.ms-excel.sheet.macroenabled.12",
  "application/vnd.ms-excel.sheet.binary.macroenabled.12",
  "application/vnd.ms-excel",
  "application/vnd.oasis.opendocument.spreadsheet",
  "application/vnd.oasis.opendocument.text",
  "application/vnd.apple.numbers",
  "application/xml",
  "text/xml",
  "image/jpeg",
  "image/png",
  "image/webp",
  "image/svg+xml",
] as const;

export const IMAGE_TYPES: ReadonlySet<string> = new Set(WORKERS_AI_TYPES.filter((t) => t.startsWith("image/")));

const BY_EXTENSION: Record<string, string> = {
  pdf: PDF,
  docx: DOCX,
  html: HTML,
  htm: HTML,
  md: MARKDOWN,
  markdown: MARKDOWN,
  txt: PLAIN,
  csv: CSV,
  tsv: CSV,
  xhtml: HTML,
  mdx: MARKDOWN,
  rst: PLAIN,
  log: PLAIN,
  json: PLAIN,
  yaml: PLAIN,
  yml: PLAIN,
  xlsx: WORKERS_AI_TYPES[0],
  xlsm: WORKERS_AI_TYPES[1],
  xlsb: WORKERS_AI_TYPES[2],
  xls: WORKERS_AI_TYPES[3],
  ods: WORKERS_AI_TYPES[4],
  odt: WORKERS_AI_TYPES[5],
  numbers: WORKERS_AI_TYPES[6],
  xml: "application/xml",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  svg: "image/svg+xml",
};

/** The extension a converter's file name should carry for a type (toMarkdown reads it). */
export function extensionOf(mimeType: string): string {
  for (const [extension, type] of Object.entries(BY_EXTENSION)) if (type === mimeType) return extension;
  return "bin";
}

/** A MIME type without parameters, lower-cased ("text/html; charset=utf-8" -> "text/html"). */
export function bareType(mimeType: string): string {
  return mimeType.split(";")[0]!.trim().toLowerCase();
}

/** Other names of the types read here, as servers and clients send them. */
const ALIASES: Record<string, string> = {
  "text/x-markdown": MARKDOWN,
  "text/md": MARKDOWN,
  "application/xhtml+xml": HTML,
  "text/tab-separated-values": CSV,
  "application/csv": CSV,
  "application/json": PLAIN,
  "application/x-ndjson": PLAIN,
  "application/yaml": PLAIN,
  "application/x-yaml": PLAIN,
  "application/javascript": PLAIN,
  "application/x-sh": PLAIN,
  "application/sql": PLAIN,
};

/**
 * The type as ingestion names it: parameters dropped, aliases resolved, and any other `text/*` type (a log, source
 * code, reStructuredText) read as plain text rather than refused; XML stays XML (toMarkdown's).
 */
export function canonicalType(mimeType: string): string {
  const bare = bareType(mimeType);
  const alias = ALIASES[bare];
  if (alias) return alias;
  const known = (LIBRARY_TYPES as readonly string[]).includes(bare) || bare === "text/xml";
  return !known && bare.startsWith("text/") ? PLAIN : bare;
}

/** The type a file name's extension says, or null. */
export function typeFromName(fileName: string | null | undefined): string | null {
  const extension = /\.([a-z0-9]+)$/i.exec(fileName ?? "")?.[1]?.toLowerCase();
  return extension ? (BY_EXTENSION[extension] ?? null) : null;
}

const ascii = (bytes: Uint8Array, start: number, length: number) =>
  String.fromCharCode(...bytes.subarray(start, start + length));

/**
 * The type the bytes themselves say (magic numbers; a zip by the parts it names), or null when they say nothing
 * certain (text of any kind).
 */
export function typeFromBytes(bytes: Uint8Array): string | null {
  if (ascii(bytes, 0, 5) === "%PDF-") return PDF;
  if (bytes[0] === 0x89 && ascii(bytes, 1, 3) === "PNG") return "image/png";
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WEBP") return "image/webp";
  if (ascii(bytes, 0, 4) === "PK\u0003\u0004") {
    const head = ascii(bytes, 0, Math.min(bytes.length, 200));
    if (head.includes("mimetypeapplication/vnd.oasis.opendocument.text")) return WORKERS_AI_TYPES[5];
    if (head.includes("mimetypeapplication/vnd.oasis.opendocument.spreadsheet")) return WORKERS_AI_TYPES[4];
    // The zip's central directory names its parts; a Word file has word/document.xml, a workbook xl/workbook.xml.
    const tail = new TextDecoder("latin1").decode(bytes.subarray(Math.max(0, bytes.length - 65_536)));
    if (tail.includes("word/document.xml")) return DOCX;
    if (tail.includes("xl/workbook")) return WORKERS_AI_TYPES[0];
    return "application/zip";
  }
  return null;
}

/** Text that looks like an HTML page rather than Markdown or plain text. */
export function looksLikeHtml(text: string): boolean {
  return /^\s*(<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(text.slice(0, 1000));
}
