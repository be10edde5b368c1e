import { DocumentRejected } from "../errors";
import type { ConvertedDocument, DocumentConverter, DocumentFile } from "../ports";
import { type DocumentBlock, markdownBlocks } from "../shared/document-blocks";
import { extensionOf, LIBRARY_TYPES, PDF, WORKERS_AI_TYPES } from "../shared/document-types";
import type { LibraryConverter } from "./library-converter";

/**
 * Production's converter (DOCUMENT_CONVERTER=workers-ai). The libraries go first for the types they read
 * (they give a PDF's pages and outline and a page's main content, which toMarkdown does not); Workers AI's
 * `toMarkdown` takes the rest: spreadsheets, OpenDocument, XML, images (described by a model, billed in neurons)
 * and PDFs whose text the library cannot read (toMarkdown does not OCR: a scan is refused as one).
 */
export class WorkersAiConverter implements DocumentConverter {
  readonly name = "workers-ai";
  readonly supportedTypes: readonly string[] = [...LIBRARY_TYPES, ...WORKERS_AI_TYPES];

  constructor(
    private readonly ai: Ai,
    private readonly libraries: LibraryConverter,
  ) {}

  async convert(file: DocumentFile, options: { maxPages: number }): Promise<ConvertedDocument> {
    if ((LIBRARY_TYPES as readonly string[]).includes(file.mimeType)) {
      try {
        return await this.libraries.convert(file, options);
      } catch (error) {
        // No text for the library: toMarkdown may read a tagged structure the library does not. It does not OCR a
        // PDF (it reads each page's text as it is), so a scan comes back without text, and is refused as one.
        if (!(error instanceof DocumentRejected && error.details.needs_ocr === true && file.mimeType === PDF))
          throw error;
        const converted = await this.toMarkdown(file);
        if (converted.blocks.some((b) => b.kind === "text")) return converted;
        throw new DocumentRejected(
          "The PDF has no text layer (a scan?), and Workers AI's toMarkdown reads a PDF's text as it is, without OCR: " +
            "OCR it first, or ingest its pages as images (PNG or JPEG), which toMarkdown describes",
          { needs_ocr: true },
        );
      }
    } else if (!(WORKERS_AI_TYPES as readonly string[]).includes(file.mimeType)) {
      throw new DocumentRejected(
        `Unsupported document type ${file.mimeType}; supported: ${this.supportedTypes.join(", ")}`,
        { mime_type: file.mimeType, supported: this.supportedTypes },
      );
    }
    return this.toMarkdown(file);
  }

  private async toMarkdown(file: DocumentFile): Promise<ConvertedDocument> {
    const name = /\.[a-z0-9]+$/i.test(file.fileName) ? file.fileName : `${file.fileName}.${extensionOf(file.mimeType)}`;
    const result = await this.ai.toMarkdown(
      { name, blob: new Blob([file.bytes], { type: file.mimeType }) },
      { conversionOptions: { pdf: { metadata: false } } },
    );
    if (result.format === "error")
      throw new DocumentRejected(`Workers AI could not convert the document: ${result.error}`);
    return { title: null, ...pagedBlocks(result.data) };
  }
}

/** toMarkdown marks a PDF's pages with a "Page N" heading: those set the page of what follows and are not sections. */
const PAGE_HEADING = /^page\s+(\d+)$/i;

/** toMarkdown's Markdown as blocks, its page headings turned into page numbers; its metadata section dropped. */
export function pagedBlocks(markdown: string): { blocks: DocumentBlock[]; pages: number | null } {
  const blocks: DocumentBlock[] = [];
  let page: number | undefined;
  let pages = 0;
  let inMetadata = false;
  for (const block of markdownBlocks(markdown)) {
    if (block.kind === "heading") {
      const marker = PAGE_HEADING.exec(block.text);
      if (marker) {
        page = Number(marker[1]);
        pages = Math.max(pages, page);
        continue;
      }
      inMetadata = /^metadata$/i.test(block.text);
      if (inMetadata || /^contents$/i.test(block.text)) continue;
    } else if (inMetadata) continue;
    blocks.push(page === undefined ? block : { ...block, page });
  }
  return { blocks, pages: pages > 0 ? pages : null };
}
