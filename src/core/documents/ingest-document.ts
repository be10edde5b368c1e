import { scopeAllowsProject, type TenantScope } from "../../db/scope";
import { DocumentRejected, invalidParameter, permissionDenied } from "../../errors";
import type { Services } from "../../ports";
import { blocksToMarkdown } from "../../shared/document-blocks";
import { bareType, CSV, HTML, looksLikeHtml, MARKDOWN, typeFromBytes, typeFromName } from "../../shared/document-types";
import type { NewItem } from "../memory/item-types";
import { writeItems } from "../memory/items";
import { deleteChunkItems } from "./delete-document";
import {
  type DocumentRow,
  documentItemIds,
  readDocumentByKey,
  type SectionSummary,
  writeDocumentRow,
} from "./document-rows";
import { fetchDocumentUrl } from "./fetch-url";
import { markdownKey, originalKey } from "./originals";
import { SECTION_SEPARATOR, sectionDocument } from "./sections";

/** Where the document comes from: the parameter that carried it names it in errors. */
export type DocumentSource =
  | { parameter: "url"; url: string }
  | { parameter: "content"; text: string }
  | { parameter: "content_base64"; bytes: Uint8Array }
  /** A file sent to POST /documents as the body or a form's `file` part (document-upload.ts). */
  | { parameter: "file"; bytes: Uint8Array; contentType: string | null; fileName: string | null };

export interface DocumentInput {
  source: DocumentSource;
  mimeType?: string;
  fileName?: string;
  title?: string;
  documentKey?: string;
  project: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** The fetch a URL goes through (the global one). */
  fetch: typeof fetch;
}

export interface IngestedDocument {
  documentId: string;
  status: "ready";
  title: string;
  mimeType: string;
  pages: number | null;
  sections: number;
  chunks: number;
  tokens: number;
  replaced: boolean;
  unchanged: boolean;
}

/**
 * Ingests a document whole (docs/documents.md): the bytes from the source (a URL fetched safely), checked against the
 * limits; the SHA-256 compared with the stored version of the same `documentKey` (the same bytes do no work); the
 * conversion to headings and text with pages; the sections and their chunks; the original and the Markdown to R2;
 * then the chunks (items pointing at the document) and the document's row in one D1 batch, searchable by keyword at
 * once. A replacement keeps the document's id and removes the previous version's chunks and objects after. Any refusal
 * comes before anything is stored.
 */
export async function ingestDocument(
  scope: TenantScope,
  services: Services,
  input: DocumentInput,
): Promise<IngestedDocument> {
  const limits = services.config.documents;
  if (!scopeAllowsProject(scope, input.project))
    throw permissionDenied(
      `This key may not touch project '${input.project}'; it is limited to: ${scope.projects!.join(", ")}`,
      { allowed_projects: scope.projects },
    );
  const parameter = input.source.parameter;
  const loaded = await loadBytes(input, limits);
  const { bytes } = loaded;
  if (bytes.byteLength === 0 || (parameter === "content" && input.source.text.trim() === ""))
    throw invalidParameter(parameter, `${parameter} is empty: there is no document to ingest`);
  if (bytes.byteLength > limits.maxBytes)
    throw invalidParameter(
      parameter,
      `The document is ${bytes.byteLength} bytes; the limit is ${limits.maxBytes} (DOCUMENT_MAX_BYTES)`,
      { bytes: bytes.byteLength, limit: limits.maxBytes },
    );
  const sha256 = await sha256Bytes(bytes);
  const previous = input.documentKey ? await readDocumentByKey(scope, input.project, input.documentKey) : null;
  if (previous && previous.sha256 === sha256 && previous.status === "ready") return unchangedAnswer(previous);

  const mimeType = inferType(input, loaded);
  const fileName = input.fileName ?? loaded.fileName ?? null;
  let converted: Awaited<ReturnType<Services["documents"]["convert"]>>;
  try {
    converted = await services.documents.convert(
      { bytes, mimeType, fileName: fileName ?? "document" },
      { maxPages: limits.maxPages },
    );
  } catch (error) {
    if (error instanceof DocumentRejected) throw invalidParameter(parameter, error.message, error.details);
    throw error;
  }
  const counter = await services.tokens();
  const sections = sectionDocument(converted.blocks, counter);
  const chunkCount = sections.reduce((n, s) => n + s.chunks.length, 0);
  if (chunkCount === 0) throw invalidParameter(parameter, "The document has no text to search (after conversion)");

  const documentId = previous?.id ?? crypto.randomUUID();
  const title = (input.title ?? converted.title ?? fileName ?? loaded.url ?? "Untitled document").slice(0, 500);
  const items: NewItem[] = [];
  for (const section of sections) {
    const path = section.path.join(SECTION_SEPARATOR);
    for (const chunk of section.chunks) {
      items.push({
        project: input.project,
        kind: "document",
        type: "document",
        content: chunk.content,
        tags: input.tags,
        metadata: input.metadata,
        document: { id: documentId, title, sha256, index: items.length, page: chunk.page, section: path },
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
  const staleItems = previous ? await documentItemIds(scope, documentId) : [];

  // The original and its Markdown first: a row never names an object that is not there.
  const tenant = scope.tenantId;
  await services.originals.put(originalKey(tenant, documentId, sha256), bytes, {
    httpMetadata: { contentType: mimeType },
    customMetadata: { file_name: fileName ?? "", project: input.project },
  });
  await services.originals.put(markdownKey(tenant, documentId, sha256), blocksToMarkdown(converted.blocks), {
    httpMetadata: { contentType: "text/markdown; charset=utf-8" },
  });
  const row = {
    id: documentId,
    project: input.project,
    document_key: input.documentKey ?? null,
    title,
    file_name: fileName,
    url: loaded.url,
    mime_type: mimeType,
    bytes: bytes.byteLength,
    sha256,
    pages: converted.pages,
    status: "ready",
    error: null,
    sections: JSON.stringify(summaries),
    chunks: chunkCount,
    tokens,
    tags: JSON.stringify(input.tags ?? []),
    metadata: JSON.stringify(input.metadata ?? {}),
  };
  try {
    await writeItems(scope, services, items, {
      noExtractionJobs: true,
      alsoInBatch: () => [writeDocumentRow(scope, row, Date.now())],
    });
  } catch (error) {
    if (!previous || previous.sha256 !== sha256) {
      await services.originals.delete([
        originalKey(tenant, documentId, sha256),
        markdownKey(tenant, documentId, sha256),
      ]);
    }
    throw error;
  }
  if (previous) {
    await deleteChunkItems(scope, services, staleItems);
    if (previous.sha256 !== sha256)
      await services.originals.delete([
        originalKey(tenant, documentId, previous.sha256),
        markdownKey(tenant, documentId, previous.sha256),
      ]);
  }
  return {
    documentId,
    status: "ready",
    title,
    mimeType,
    pages: converted.pages,
    sections: sections.length,
    chunks: chunkCount,
    tokens,
    replaced: previous !== null,
    unchanged: false,
  };
}

function unchangedAnswer(row: DocumentRow): IngestedDocument {
  return {
    documentId: row.id,
    status: "ready",
    title: row.title,
    mimeType: row.mime_type,
    pages: row.pages,
    sections: (JSON.parse(row.sections) as unknown[]).length,
    chunks: row.chunks,
    tokens: row.tokens,
    replaced: false,
    unchanged: true,
  };
}

interface LoadedBytes {
  bytes: Uint8Array;
  url: string | null;
  contentType: string | null;
  fileName: string | null;
}

async function loadBytes(input: DocumentInput, limits: Services["config"]["documents"]): Promise<LoadedBytes> {
  const source = input.source;
  switch (source.parameter) {
    case "content":
      return { bytes: new TextEncoder().encode(source.text), url: null, contentType: null, fileName: null };
    case "content_base64":
      return { bytes: source.bytes, url: null, contentType: null, fileName: null };
    case "file":
      return { bytes: source.bytes, url: null, contentType: source.contentType, fileName: source.fileName };
    case "url": {
      const fetched = await fetchDocumentUrl(source.url, {
        maxBytes: limits.maxBytes,
        timeoutMs: limits.fetchTimeoutMs,
        allowHosts: limits.fetchAllowHosts,
        fetch: input.fetch,
      });
      return {
        bytes: fetched.bytes,
        url: fetched.finalUrl,
        contentType: fetched.contentType,
        fileName: fetched.fileName,
      };
    }
  }
}

/** Response types that say nothing about the document. */
const GENERIC_TYPES = new Set(["application/octet-stream", "binary/octet-stream", "application/download"]);

/** The MIME type: as given, else as the bytes say, the response says, the name says, or the text looks. */
function inferType(input: DocumentInput, loaded: LoadedBytes): string {
  if (input.mimeType) return bareType(input.mimeType);
  const fromBytes = typeFromBytes(loaded.bytes);
  if (fromBytes) return fromBytes;
  if (loaded.contentType && !GENERIC_TYPES.has(loaded.contentType)) return loaded.contentType;
  const fromName = typeFromName(input.fileName ?? loaded.fileName);
  if (fromName) return fromName;
  const head = new TextDecoder().decode(loaded.bytes.subarray(0, 2000));
  if (looksLikeHtml(head)) return HTML;
  return input.fileName?.toLowerCase().endsWith(".csv") ? CSV : MARKDOWN;
}

async function sha256Bytes(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
