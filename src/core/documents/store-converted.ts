import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { blocksToMarkdown, printableBlocks, withoutControls } from "../../shared/document-blocks";
import type { NewItem } from "../memory/item-types";
import { writeItems } from "../memory/items";
import { deleteChunkItems } from "./delete-document";
import { queueDocumentExtraction } from "./document-extraction";
import { type DocumentRow, documentItemIds, type SectionSummary, writeDocumentRow } from "./document-rows";
import { deleteOtherVersions, markdownKey, originalKey } from "./originals";
import { SECTION_SEPARATOR, sectionDocument } from "./sections";

/** A document's bytes and what is known of it before conversion: in the request, or read back by a queued job. */
export interface DocumentToConvert {
  documentId: string;
  project: string;
  bytes: Uint8Array;
  sha256: string;
  mimeType: string;
  fileName: string | null;
  url: string | null;
  documentKey: string | null;
  /** The caller's title; else the document's own, its file name, its URL. */
  title: string | null;
  tags: string[] | undefined;
  metadata: Record<string, unknown> | undefined;
  /** Extract memories from its chunks once they are stored (document-extraction.ts). */
  extract: boolean;
  /** The version it replaces (its SHA-256), whose chunks and objects go once this one is in; null for a new one. */
  replacing: string | null;
  /** The original is already in R2 (a queued conversion put it there): only the Markdown is written. */
  originalStored: boolean;
  /** A queued conversion's row must still be converting this version when it commits (else nothing is written). */
  whileConverting: boolean;
}

export interface StoredDocument {
  title: string;
  pages: number | null;
  sections: number;
  chunks: number;
  tokens: number;
}

/** Nothing to search in what the converter gave; the caller says it in its own terms (a parameter, or a status). */
export class NoText extends Error {}

/**
 * Converts the bytes (DocumentRejected for a broken, encrypted or unsupported file), cuts the sections and their
 * chunks, puts the original and the Markdown in R2, then writes the chunks (items pointing at the document) and the
 * document's row in one D1 batch, searchable by keyword at once. A replacement's earlier chunks and objects go after.
 * A failed batch removes the objects it put. A document that extracts has its extraction queued last.
 */
export async function convertAndStore(
  scope: TenantScope,
  services: Services,
  doc: DocumentToConvert,
): Promise<StoredDocument> {
  const converted = await services.documents.convert(
    { bytes: doc.bytes, mimeType: doc.mimeType, fileName: doc.fileName ?? "document" },
    { maxPages: services.config.documents.maxPages },
  );
  const blocks = printableBlocks(converted.blocks);
  const counter = await services.tokens();
  const sections = sectionDocument(blocks, counter);
  const chunkCount = sections.reduce((n, s) => n + s.chunks.length, 0);
  if (chunkCount === 0) throw new NoText("The document has no text to search (after conversion)");

  const own = withoutControls(converted.title ?? "").trim() || null;
  const title = (doc.title ?? own ?? doc.fileName ?? doc.url ?? "Untitled document").slice(0, 500);
  const items: NewItem[] = [];
  for (const section of sections) {
    const path = section.path.join(SECTION_SEPARATOR);
    for (const chunk of section.chunks) {
      items.push({
        project: doc.project,
        kind: "document",
        type: "document",
        content: chunk.content,
        tags: doc.tags,
        metadata: doc.metadata,
        document: {
          id: doc.documentId,
          title,
          sha256: doc.sha256,
          index: items.length,
          page: chunk.page,
          section: path,
        },
      });
    }
  }
  const summaries: SectionSummary[] = sections.map((s) => ({
    section: s.path.join(SECTION_SEPARATOR),
    page: s.page,
    tokens: s.tokens,
    chunks: s.chunks.length,
  }));
  const tokens = sections.reduce((n, s) => n + s.chunks.reduce((m, c) => m + c.tokens, 0), 0);
  const staleItems = doc.replacing !== null || doc.whileConverting ? await documentItemIds(scope, doc.documentId) : [];

  // The original and its Markdown first: a row never names an object that is not there.
  const tenant = scope.tenantId;
  const written = [markdownKey(tenant, doc.documentId, doc.sha256)];
  if (!doc.originalStored) written.push(await putOriginal(scope, services, doc));
  await services.originals.put(written[0]!, blocksToMarkdown(blocks), {
    httpMetadata: { contentType: "text/markdown; charset=utf-8" },
  });
  const row = versionRow(doc, title, {
    pages: converted.pages,
    status: "ready",
    summaries,
    chunks: chunkCount,
    tokens,
  });
  try {
    await writeItems(scope, services, items, {
      noExtractionJobs: true,
      alsoInBatch: () => [writeDocumentRow(scope, row, Date.now(), doc.whileConverting)],
    });
  } catch (error) {
    // The same version replaced by itself keeps its objects: the row still names them.
    if (doc.replacing !== doc.sha256) await services.originals.delete(written);
    throw error;
  }
  if (staleItems.length > 0) await deleteChunkItems(scope, services, staleItems);
  // Every earlier version's objects, not only the one replaced: a failed queued version left the one before it.
  if (doc.replacing !== null || doc.whileConverting)
    await deleteOtherVersions(services.originals, tenant, doc.documentId, doc.sha256);
  if (doc.extract) await queueDocumentExtraction(scope, services, doc.documentId);
  return { title, pages: converted.pages, sections: sections.length, chunks: chunkCount, tokens };
}

/** Puts the version's original in R2; its key. */
export async function putOriginal(
  scope: TenantScope,
  services: Services,
  doc: Pick<DocumentToConvert, "documentId" | "sha256" | "bytes" | "mimeType" | "fileName" | "project">,
): Promise<string> {
  const key = originalKey(scope.tenantId, doc.documentId, doc.sha256);
  await services.originals.put(key, doc.bytes, {
    httpMetadata: { contentType: doc.mimeType },
    customMetadata: { file_name: doc.fileName ?? "", project: doc.project },
  });
  return key;
}

/** The row of a version: what was known before conversion, and what conversion found (nothing yet while converting). */
export function versionRow(
  doc: Omit<DocumentToConvert, "originalStored" | "whileConverting" | "replacing">,
  title: string,
  found: {
    pages: number | null;
    status: "ready" | "converting";
    summaries: SectionSummary[];
    chunks: number;
    tokens: number;
  },
): Omit<DocumentRow, "created_at" | "updated_at"> {
  return {
    id: doc.documentId,
    project: doc.project,
    document_key: doc.documentKey,
    title,
    file_name: doc.fileName,
    url: doc.url,
    mime_type: doc.mimeType,
    bytes: doc.bytes.byteLength,
    sha256: doc.sha256,
    pages: found.pages,
    status: found.status,
    error: null,
    sections: JSON.stringify(found.summaries),
    chunks: found.chunks,
    tokens: found.tokens,
    tags: JSON.stringify(doc.tags ?? []),
    metadata: JSON.stringify(doc.metadata ?? {}),
    extract: doc.extract ? 1 : 0,
    extracted_count: 0,
  };
}
