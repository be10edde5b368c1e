import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { deleteItems } from "../memory/delete-items";
import { SEGMENT_KEY_COLUMNS, type SegmentKey, type SegmentKeyRow, segmentKeyOf } from "../working-set/segments";
import { documentItemIds } from "./document-rows";
import { deleteObjects, documentPrefix, tenantPrefix } from "./originals";

const IDS = "(SELECT value FROM json_each(?))";

/** Items by id as the one destructive path takes them. */
async function segmentKeys(scope: TenantScope, itemIds: readonly string[]): Promise<SegmentKey[]> {
  if (itemIds.length === 0) return [];
  const { results } = await scope.d1
    .prepare(`SELECT ${SEGMENT_KEY_COLUMNS} FROM items WHERE tenant_id = ? AND id IN ${IDS}`)
    .bind(scope.tenantId, JSON.stringify(itemIds))
    .all<SegmentKeyRow>();
  return results.map(segmentKeyOf);
}

/** Deletes chunk items with everything derived from them (vectors, links, derived memories: delete-items.ts). */
export async function deleteChunkItems(
  scope: TenantScope,
  services: Services,
  itemIds: readonly string[],
): Promise<number> {
  const keys = await segmentKeys(scope, itemIds);
  return (await deleteItems(scope, services, keys)).length;
}

/**
 * Deletes a document: its chunks (with their vectors, links and what was derived from them), its R2 objects, then
 * its row. A failure part way leaves the row, so the call can be repeated and finishes the job.
 */
export async function deleteDocument(scope: TenantScope, services: Services, documentId: string): Promise<number> {
  const removed = await deleteChunkItems(scope, services, await documentItemIds(scope, documentId));
  await deleteObjects(services.originals, documentPrefix(scope.tenantId, documentId));
  await scope.d1.prepare("DELETE FROM documents WHERE tenant_id = ? AND id = ?").bind(scope.tenantId, documentId).run();
  return removed;
}

/** Documents a deletion step takes at once (their items are gone by then: the items step runs first). */
const DOCUMENTS_PER_STEP = 100;

/**
 * One bounded step of tenant or project deletion (src/core/ownership/): up to DOCUMENTS_PER_STEP documents' R2
 * objects and rows, then (tenant deletion) any object left under the tenant's prefix. Returns how many went; 0 when
 * nothing is left.
 */
export async function deleteDocumentBatch(
  scope: TenantScope,
  services: Services,
  project: string | null,
): Promise<number> {
  const { results } = await scope.d1
    .prepare(`SELECT id FROM documents WHERE tenant_id = ?${project === null ? "" : " AND project = ?"} LIMIT ?`)
    .bind(scope.tenantId, ...(project === null ? [] : [project]), DOCUMENTS_PER_STEP)
    .all<{ id: string }>();
  for (const { id } of results) await deleteObjects(services.originals, documentPrefix(scope.tenantId, id));
  if (results.length > 0) {
    await scope.d1
      .prepare(`DELETE FROM documents WHERE tenant_id = ? AND id IN ${IDS}`)
      .bind(scope.tenantId, JSON.stringify(results.map((r) => r.id)))
      .run();
    return results.length;
  }
  // Objects whose row never committed (a write cut short) go with their tenant.
  return project === null ? deleteObjects(services.originals, tenantPrefix(scope.tenantId), 1) : 0;
}
