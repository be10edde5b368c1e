import { DocumentRejected } from "../errors";
import type { ConvertedDocument } from "../ports";
import { convertHtml } from "./html-main-content";

// Word with mammoth: its default style map turns the heading styles (Heading 1-6, Title) into h1-h6, which become
// sections. Loaded on first use.

export async function convertDocx(bytes: Uint8Array): Promise<ConvertedDocument> {
  const mammoth = await import("mammoth");
  let html: string;
  try {
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    // mammoth's browser build reads `arrayBuffer`, its Node build (what the test runner resolves) `buffer`: give both.
    const input = { arrayBuffer: buffer, buffer: bytes };
    ({ value: html } = await mammoth.convertToHtml(input, { ignoreEmptyParagraphs: true }));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new DocumentRejected(`The Word file could not be read (broken or not a .docx): ${message}`, { broken: true });
  }
  const converted = await convertHtml(`<html><body>${html}</body></html>`, { wholePage: true });
  return { ...converted, pages: null };
}
