import type { TenantScope } from "../../db/scope";
import { AppError } from "../../errors";
import type { Services } from "../../ports";
import { bytesOfBase64 } from "../../shared/base64";
import { markdownKey, originalKey } from "../documents/originals";
import { EXTRACTION_GRACE_MS } from "../memory/conversation-jobs";
import type { DocumentPlace } from "../memory/item-types";
import { badLine } from "./import-lines";
import type { DocumentRecord, ItemRecord } from "./import-schemas";

/** The documents of an import, read and checked before anything is written. */
export interface DocumentPlan {
  /** Each document the import writes (not there yet), with its original's bytes when the file carries them. */
  writes: { record: DocumentRecord; id: string; project: string; original: Uint8Array | null }[];
  /** A file's document id to what its chunks need: the document's id here, title and version. */
  places: Map<string, { id: string; title: string; sha256: string }>;
}

/**
 * Which documents are new here, each original decoded and checked against its SHA-256 and the size limit. A key that
 * names another document of the project here is a conflict: the file's document would take its place unasked.
 */
export async function planDocuments(
  scope: TenantScope,
  services: Services,
  documents: DocumentRecord[],
  newId: (id: string) => string,
  projectOf: (p: string) => string,
): Promise<DocumentPlan> {
  const plan: DocumentPlan = { writes: [], places: new Map() };
  if (documents.length === 0) return plan;
  const { results: stored } = await scope.d1
    .prepare(
      `SELECT id, project, document_key FROM documents WHERE tenant_id = ?1
       AND (id IN (SELECT value FROM json_each(?2)) OR document_key IN (SELECT value FROM json_each(?3)))`,
    )
    .bind(
      scope.tenantId,
      JSON.stringify(documents.map((d) => newId(d.id))),
      JSON.stringify(documents.flatMap((d) => (d.document_key ? [d.document_key] : []))),
    )
    .all<{ id: string; project: string; document_key: string | null }>();
  const present = new Set(stored.map((s) => s.id));
  const keys = new Map<string, DocumentRecord>();
  for (const record of documents) {
    const id = newId(record.id);
    const project = projectOf(record.project);
    const key = `${project}\u0000${record.document_key}`;
    if (record.document_key && keys.has(key))
      throw badLine(
        record.line,
        `document_key '${record.document_key}' is given to another document of project '${project}' too (line ${keys.get(key)!.line})`,
      );
    if (record.document_key) keys.set(key, record);
    plan.places.set(record.id, { id, title: record.title, sha256: record.sha256 });
    const taken = stored.find((s) => s.id !== id && s.project === project && s.document_key === record.document_key);
    if (record.document_key && taken)
      throw new AppError(
        "CONFLICT",
        `Document key '${record.document_key}' names another document (${taken.id}) in project '${project}' here`,
        { document_key: record.document_key },
      );
    if (present.has(id)) continue;
    plan.writes.push({ record, id, project, original: await originalOf(record, services.config.documents.maxBytes) });
  }
  return plan;
}

async function originalOf(record: DocumentRecord, maxBytes: number): Promise<Uint8Array | null> {
  if (record.original_base64 === undefined) return null;
  const bytes = bytesOfBase64(record.original_base64);
  if (!bytes) throw badLine(record.line, "original_base64 is not valid base64");
  if (bytes.byteLength > maxBytes)
    throw badLine(record.line, `the original is ${bytes.byteLength} bytes; at most ${maxBytes} (DOCUMENT_MAX_BYTES)`);
  const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
  if (digest !== record.sha256) throw badLine(record.line, "the original's SHA-256 is not the document's sha256");
  return bytes;
}

/**
 * The new documents' Markdown and originals put in R2 (before their rows: a row never names an object that is not
 * there), and the statements that write their rows. A document converting when it was exported had no job to finish
 * it here: it arrives failed, saying so.
 */
export async function writeDocuments(
  scope: TenantScope,
  services: Services,
  plan: DocumentPlan,
): Promise<D1PreparedStatement[]> {
  for (const { record, id, original } of plan.writes) {
    if (record.markdown !== null)
      await services.originals.put(markdownKey(scope.tenantId, id, record.sha256), record.markdown, {
        httpMetadata: { contentType: "text/markdown; charset=utf-8" },
      });
    if (original)
      await services.originals.put(originalKey(scope.tenantId, id, record.sha256), original, {
        httpMetadata: { contentType: record.mime_type },
        customMetadata: { file_name: record.file_name ?? "", project: record.project },
      });
  }
  return plan.writes.map(({ record: r, id, project }) => {
    const converting = r.status === "converting";
    return scope.d1
      .prepare(
        `INSERT OR IGNORE INTO documents (tenant_id, id, project, document_key, title, file_name, url, mime_type, bytes,
           sha256, pages, status, error, sections, chunks, tokens, tags, metadata, created_at, updated_at, extract,
           extracted_count, extraction_epoch, extract_due_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(
        scope.tenantId,
        id,
        project,
        r.document_key,
        r.title,
        r.file_name,
        r.url,
        r.mime_type,
        r.bytes,
        r.sha256,
        r.pages,
        converting ? "failed" : r.status,
        converting ? "it was still converting when it was exported: ingest it again" : r.error,
        JSON.stringify(r.sections),
        r.chunks,
        r.tokens,
        JSON.stringify(r.tags),
        JSON.stringify(r.metadata),
        r.created_at,
        r.updated_at,
        r.extract ? 1 : 0,
        r.extracted_count,
        r.extraction_epoch,
        // A ready copy not read to its end is due: the minute pass sends its job to read the rest.
        r.extract && !converting && r.status === "ready" && r.extracted_count < r.chunks
          ? Date.now() + EXTRACTION_GRACE_MS
          : null,
      );
  });
}

/**
 * Where a chunk of the file stands here: its document (by its id here), page and section, and its place among the
 * document's chunks in the file; null for other items.
 */
export function chunkPlace(plan: DocumentPlan, item: ItemRecord, index: number): DocumentPlace | null {
  if (item.document_id === undefined) return null;
  const document = plan.places.get(item.document_id)!;
  return { ...document, index, page: item.document_page ?? null, section: item.document_section ?? "" };
}

/**
 * What a chunk's content hash is made of: its document's id and version too, and its own id for its place (as
 * items.ts dedupeIdentity makes two equal passages two chunks), so no chunk is taken for another item's copy.
 */
export function dedupeInput(plan: DocumentPlan, item: ItemRecord, newId: (id: string) => string): string {
  if (item.document_id === undefined) return item.content;
  const document = plan.places.get(item.document_id)!;
  return `${item.content}\u0000document\u0000${document.id}\u0000${document.sha256}\u0000${newId(item.id)}`;
}
