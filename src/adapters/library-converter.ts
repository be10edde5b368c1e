import { DocumentRejected } from "../errors";
import type { ConvertedDocument, DocumentConverter, DocumentFile } from "../ports";
import { cleanHeading, type DocumentBlock, markdownBlocks } from "../shared/document-blocks";
import { CSV, DOCX, HTML, IMAGE_TYPES, LIBRARY_TYPES, MARKDOWN, PDF, PLAIN } from "../shared/document-types";
import { frontMatter } from "../shared/front-matter";
import { decodeText } from "../shared/text-decoding";
import { convertCsv } from "./csv-rows";
import { convertDocx } from "./docx-text";
import { convertHtml } from "./html-main-content";
import { convertPdf } from "./pdf-text";

/**
 * Documents converted by libraries that run in the Worker as well as in Node: unpdf (PDF), mammoth (Word),
 * linkedom + Readability + node-html-markdown (web pages), papaparse (CSV), and Markdown as it is. The offline
 * converter (DOCUMENT_CONVERTER=local), and the first choice of the Workers AI one for these types.
 */
export class LibraryConverter implements DocumentConverter {
  readonly name = "libraries";
  readonly supportedTypes: readonly string[] = LIBRARY_TYPES;

  async convert(file: DocumentFile, options: { maxPages: number }): Promise<ConvertedDocument> {
    switch (file.mimeType) {
      case PDF:
        return convertPdf(file.bytes, options.maxPages);
      case DOCX:
        return convertDocx(file.bytes);
      case HTML:
        return convertHtml(decodeText(file.bytes, true));
      case CSV:
        return convertCsv(decodeText(file.bytes));
      case MARKDOWN:
        return convertMarkdown(decodeText(file.bytes));
      case PLAIN: {
        const blocks = markdownBlocks(decodeText(file.bytes));
        return { title: firstTitle(blocks), pages: null, blocks };
      }
      default:
        if (IMAGE_TYPES.has(file.mimeType))
          throw new DocumentRejected(
            `${file.mimeType} is an image: reading it needs OCR, which needs Workers AI (DOCUMENT_CONVERTER=workers-ai)`,
            { needs_ocr: true, mime_type: file.mimeType },
          );
        throw new DocumentRejected(
          `Unsupported document type ${file.mimeType}; supported: ${this.supportedTypes.join(", ")}`,
          { mime_type: file.mimeType, supported: this.supportedTypes },
        );
    }
  }
}

/** The first block's text when it is a level-1 heading: a Markdown file's own title. */
function firstTitle(blocks: readonly DocumentBlock[]): string | null {
  const first = blocks[0];
  return first?.kind === "heading" && first.level === 1 ? first.text : null;
}

/**
 * Markdown: its front matter (front-matter.ts) gives the title, and its description or summary leads the text; the
 * rest of it (dates, tags, layout) is not the document's content.
 */
function convertMarkdown(text: string): ConvertedDocument {
  const { fields, body } = frontMatter(text);
  const blocks = markdownBlocks(body);
  const title = fields.get("title");
  const own = title ? cleanHeading(title) : firstTitle(blocks);
  const lead = fields.get("description") ?? fields.get("summary");
  if (lead) blocks.unshift({ kind: "text", text: lead });
  return { title: own, pages: null, blocks };
}
