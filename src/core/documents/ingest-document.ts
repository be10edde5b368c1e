import { scopeAllowsProject, type TenantScope } from "../../db/scope";
import { DocumentRejected, invalidParameter, permissionDenied } from "../../errors";
import type { Services } from "../../ports";
import {
  CSV,
  canonicalType,
  HTML,
  looksLikeHtml,
  MARKDOWN,
  typeFromBytes,
  typeFromName,
} from "../../shared/document-types";
import { queueDocumentExtraction, startExtracting } from "./document-extraction";
import { type DocumentRow, readDocumentByKey } from "./document-rows";
import { fetchDocumentUrl } from "./fetch-url";
import { queueConversion } from "./queued-conversion";
import { convertAndStore, NoText } from "./store-converted";

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
  /** Extract memories from its chunks (document-extraction.ts); nothing to do where the deployment has no model. */
  extract: boolean;
  /** The fetch a URL goes through (the global one). */
  fetch: typeof fetch;
}

export interface IngestedDocument {
  documentId: string;
  /** ready: searchable by keyword now; converting: a queued job converts it (queued-conversion.ts). */
  status: "ready" | "converting";
  title: string;
  mimeType: string;
  pages: number | null;
  sections: number;
  chunks: number;
  tokens: number;
  replaced: boolean;
  unchanged: boolean;
  /** queued: its memories are extracted in a job (once it is ready); off: not asked, or no model here. */
  extraction: "queued" | "off";
}

/**
 * Ingests a document whole (docs/documents.md): the bytes from the source (a URL fetched safely), checked against the
 * limits; the SHA-256 compared with the stored version of the same `documentKey` (the same bytes do no work); then
 * converted and stored at once (store-converted.ts: searchable by keyword when the call answers), or, past
 * DOCUMENT_QUEUE_BYTES, in a queued job (queued-conversion.ts: the call answers `converting`). A replacement keeps the
 * document's id. Any refusal in the call comes before anything is stored.
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
  const extract = input.extract && services.model !== null;
  const extraction = extract ? "queued" : "off";
  // The same version again, stored or still converting: nothing to do, unless it is now to extract.
  if (previous && previous.sha256 === sha256 && previous.status !== "failed") {
    if (extract && (await startExtracting(scope, previous.id)))
      await queueDocumentExtraction(scope, services, previous.id);
    const extracting = extract || (previous.extract === 1 && services.model !== null);
    return { ...unchangedAnswer(previous), extraction: extracting ? "queued" : "off" };
  }

  const mimeType = inferType(input, loaded);
  const fileName = input.fileName ?? loaded.fileName ?? null;
  const doc = {
    documentId: previous?.id ?? crypto.randomUUID(),
    project: input.project,
    bytes,
    sha256,
    mimeType,
    fileName,
    url: loaded.url,
    documentKey: input.documentKey ?? null,
    title: input.title ?? null,
    tags: input.tags,
    metadata: input.metadata,
    extract,
  };
  const replaced = previous !== null;
  if (bytes.byteLength > limits.queueBytes) {
    const { title } = await queueConversion(scope, services, doc);
    return {
      ...answerOf(doc, "converting", replaced),
      title,
      pages: null,
      sections: 0,
      chunks: 0,
      tokens: 0,
      extraction,
    };
  }
  try {
    const stored = await convertAndStore(scope, services, {
      ...doc,
      replacing: previous?.sha256 ?? null,
      originalStored: false,
      whileConverting: false,
    });
    return { ...answerOf(doc, "ready", replaced), ...stored, extraction };
  } catch (error) {
    if (error instanceof DocumentRejected) throw invalidParameter(parameter, error.message, error.details);
    if (error instanceof NoText) throw invalidParameter(parameter, error.message);
    throw error;
  }
}

function answerOf(doc: { documentId: string; mimeType: string }, status: "ready" | "converting", replaced: boolean) {
  return { documentId: doc.documentId, status, mimeType: doc.mimeType, replaced, unchanged: false };
}

function unchangedAnswer(row: DocumentRow): Omit<IngestedDocument, "extraction"> {
  return {
    documentId: row.id,
    status: row.status as "ready" | "converting",
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
  if (input.mimeType) return canonicalType(input.mimeType);
  const fromBytes = typeFromBytes(loaded.bytes);
  if (fromBytes) return fromBytes;
  if (loaded.contentType && !GENERIC_TYPES.has(loaded.contentType)) return canonicalType(loaded.contentType);
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
