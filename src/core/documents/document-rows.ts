import { projectClause, type TenantScope } from "../../db/scope";
import { EXTRACTION_GRACE_MS } from "../memory/conversation-jobs";

/** A documents row as read. */
export interface DocumentRow {
  id: string;
  project: string;
  document_key: string | null;
  title: string;
  file_name: string | null;
  url: string | null;
  mime_type: string;
  bytes: number;
  sha256: string;
  pages: number | null;
  status: string;
  error: string | null;
  sections: string;
  chunks: number;
  tokens: number;
  tags: string;
  metadata: string;
  /** Memories are extracted from its chunks: 1, else 0. */
  extract: number;
  /** Chunks extraction has read (its cursor); the chunks all once it is done. */
  extracted_count: number;
  created_at: number;
  updated_at: number;
}

/** One section as memory_get_document lists it. */
export interface SectionSummary {
  section: string;
  page: number | null;
  tokens: number;
  chunks: number;
}

/** Every column of a documents row but the tenant's, in DocumentRow's order. */
export const COLUMNS =
  "id, project, document_key, title, file_name, url, mime_type, bytes, sha256, pages, status, error, sections, chunks, tokens, tags, metadata, extract, extracted_count, created_at, updated_at";

/** A document by id, within the projects the scope may read; null when there is none. */
export async function readDocument(scope: TenantScope, documentId: string): Promise<DocumentRow | null> {
  const reach = projectClause(scope, "project");
  return scope.d1
    .prepare(`SELECT ${COLUMNS} FROM documents WHERE tenant_id = ? AND id = ?${reach.sql}`)
    .bind(scope.tenantId, documentId, ...reach.params)
    .first<DocumentRow>();
}

/** The project's document of a client's key, or null. */
export async function readDocumentByKey(
  scope: TenantScope,
  project: string,
  documentKey: string,
): Promise<DocumentRow | null> {
  return scope.d1
    .prepare(`SELECT ${COLUMNS} FROM documents WHERE tenant_id = ? AND project = ? AND document_key = ?`)
    .bind(scope.tenantId, project, documentKey)
    .first<DocumentRow>();
}

/**
 * The document's row as written (inserted, or replacing the row of the same id). `whileConverting`: only while the
 * row is converting this version (a queued conversion's commit); else its status is NULL, which the column refuses,
 * and the whole batch rolls back: a document deleted or replaced meanwhile gets no chunks and no row back. A ready
 * version that extracts is due for extraction from now (extract_due_at: the minute pass sends a lost job).
 */
export function writeDocumentRow(
  scope: TenantScope,
  row: Omit<DocumentRow, "created_at" | "updated_at">,
  now: number,
  whileConverting = false,
): D1PreparedStatement {
  const status = whileConverting
    ? "(SELECT ?12 WHERE EXISTS (SELECT 1 FROM documents WHERE tenant_id = ?1 AND id = ?2 AND sha256 = ?10 AND status = 'converting'))"
    : "?12";
  return scope.d1
    .prepare(
      `INSERT INTO documents (tenant_id, ${COLUMNS}, extract_due_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
         ${status}, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, CASE WHEN ?12 = 'ready' AND ?19 = 1 THEN ?23 END)
       ON CONFLICT (tenant_id, id) DO UPDATE SET title = excluded.title, file_name = excluded.file_name, url = excluded.url,
         mime_type = excluded.mime_type, bytes = excluded.bytes, sha256 = excluded.sha256, pages = excluded.pages,
         status = excluded.status, error = excluded.error, sections = excluded.sections, chunks = excluded.chunks,
         tokens = excluded.tokens, tags = excluded.tags, metadata = excluded.metadata, extract = excluded.extract,
         extracted_count = excluded.extracted_count, extract_due_at = excluded.extract_due_at,
         updated_at = excluded.updated_at`,
    )
    .bind(
      scope.tenantId,
      row.id,
      row.project,
      row.document_key,
      row.title,
      row.file_name,
      row.url,
      row.mime_type,
      row.bytes,
      row.sha256,
      row.pages,
      row.status,
      row.error,
      row.sections,
      row.chunks,
      row.tokens,
      row.tags,
      row.metadata,
      row.extract,
      row.extracted_count,
      now,
      now,
      now + EXTRACTION_GRACE_MS,
    );
}

/** The ids of a document's chunk items (of every version still stored). */
export async function documentItemIds(scope: TenantScope, documentId: string): Promise<string[]> {
  const { results } = await scope.d1
    .prepare("SELECT id FROM items WHERE tenant_id = ? AND document_id = ?")
    .bind(scope.tenantId, documentId)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

/** One document as a project's listing gives it: its row less the section list (counted), hash, tags and metadata. */
export type DocumentListRow = Omit<
  DocumentRow,
  "project" | "sha256" | "sections" | "tags" | "metadata" | "extract" | "extracted_count"
> & {
  sections: number;
};

/** Where a page of the listing ends: the last row's creation time and id (newest first, the id breaking ties). */
export interface ListPosition {
  createdAt: number;
  id: string;
}

/**
 * A project's documents newest first, `limit` of them after `after` (exclusive), within the projects the scope may
 * read; one more row than asked is read to tell whether another page follows. Walks documents_tenant_project.
 */
export async function listDocuments(
  scope: TenantScope,
  project: string,
  limit: number,
  after: ListPosition | null,
): Promise<{ rows: DocumentListRow[]; next: ListPosition | null }> {
  const reach = projectClause(scope, "project");
  const page = after ? " AND (created_at < ? OR (created_at = ? AND id < ?))" : "";
  const { results } = await scope.d1
    .prepare(
      `SELECT id, document_key, title, file_name, url, mime_type, bytes, pages, status, error,
         json_array_length(sections) AS sections, chunks, tokens, created_at, updated_at
       FROM documents WHERE tenant_id = ? AND project = ?${reach.sql}${page}
       ORDER BY created_at DESC, id DESC LIMIT ?`,
    )
    .bind(
      scope.tenantId,
      project,
      ...reach.params,
      ...(after ? [after.createdAt, after.createdAt, after.id] : []),
      limit + 1,
    )
    .all<DocumentListRow>();
  const rows = results.slice(0, limit);
  const last = rows[rows.length - 1];
  return { rows, next: results.length > limit && last ? { createdAt: last.created_at, id: last.id } : null };
}
