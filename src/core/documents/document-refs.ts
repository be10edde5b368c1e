import type { TenantScope } from "../../db/scope";

/** Where a chunk of a document comes from, as search hits, memory_get, memory_list and context entries cite it. */
export interface DocumentRef {
  documentId: string;
  title: string;
  fileName: string | null;
  url: string | null;
  mimeType: string;
  /** The page its text starts on (PDF), 1-based; null without pages. */
  page: number | null;
  /** "Guide > Install > Linux"; "" before the first heading. */
  section: string;
}

/**
 * The document places of the given items that are document chunks, by item id, in one query (through the
 * (tenant, id) index); items of no document are absent. Callers pass only items whose kind may be a document chunk.
 */
export async function documentRefs(scope: TenantScope, itemIds: readonly string[]): Promise<Map<string, DocumentRef>> {
  const refs = new Map<string, DocumentRef>();
  if (itemIds.length === 0) return refs;
  const { results } = await scope.d1
    .prepare(
      `SELECT i.id, i.document_id, i.document_page, i.document_section, d.title, d.file_name, d.url, d.mime_type
       FROM items i JOIN documents d ON d.tenant_id = i.tenant_id AND d.id = i.document_id
       WHERE i.tenant_id = ? AND i.id IN (SELECT value FROM json_each(?)) AND i.document_id IS NOT NULL`,
    )
    .bind(scope.tenantId, JSON.stringify([...new Set(itemIds)]))
    .all<{
      id: string;
      document_id: string;
      document_page: number | null;
      document_section: string | null;
      title: string;
      file_name: string | null;
      url: string | null;
      mime_type: string;
    }>();
  for (const r of results)
    refs.set(r.id, {
      documentId: r.document_id,
      title: r.title,
      fileName: r.file_name,
      url: r.url,
      mimeType: r.mime_type,
      page: r.document_page,
      section: r.document_section ?? "",
    });
  return refs;
}
