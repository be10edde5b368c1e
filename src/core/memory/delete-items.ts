import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { bumpCacheGenerations } from "../context/cache-generation";
import { uncountKeywordChunks } from "./keyword-index";
import { ITEM_LINK_TYPES, slices, type SegmentKey } from "../working-set/segments";

const ITEM_TYPES_SQL = ITEM_LINK_TYPES.map((t) => `'${t}'`).join(", ");
const IDS = "(SELECT value FROM json_each(?))";
const CHUNK_IDS = `(SELECT id FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS})`;
const CHUNK_ID_STRINGS = `(SELECT CAST(id AS TEXT) FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS})`;

/**
 * The one destructive path: removes items with everything derived from them, so nothing is left
 * orphaned. Vectors go first (the port: Vectorize by id, or the local index's rows); then one D1
 * batch removes FTS rows, links from or to the items or their chunks, chunks, the items themselves,
 * adjusts their conversations' counters, and bumps the cache generations of their projects (cached
 * contexts that held them are never served again). If the vector deletion fails nothing in D1 has
 * changed and the call can be repeated; if the batch fails, the items keep working by keyword and a
 * repeated delete finishes the job.
 */
export async function deleteItems(scope: TenantScope, services: Services, items: readonly SegmentKey[]): Promise<SegmentKey[]> {
  if (items.length === 0) return [];
  const groups = slices(items.map((i) => i.id));
  const chunkRows = await scope.d1.batch<{ id: number }>(
    groups.map((ids) => scope.d1.prepare(`SELECT id FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS}`).bind(scope.tenantId, JSON.stringify(ids))),
  );
  const chunkIds = chunkRows.flatMap((r) => r.results.map((c) => c.id));
  if (chunkIds.length > 0) await services.vectors.delete(scope.tenantId, chunkIds);

  const t = scope.tenantId;
  const statements: D1PreparedStatement[] = [];
  for (const ids of groups) {
    const json = JSON.stringify(ids);
    statements.push(
      scope.d1.prepare(`DELETE FROM chunks_fts WHERE rowid IN ${CHUNK_IDS}`).bind(t, json),
      scope.d1.prepare(`DELETE FROM links WHERE tenant_id = ? AND source_type IN (${ITEM_TYPES_SQL}) AND source_id IN ${IDS}`).bind(t, json),
      scope.d1.prepare(`DELETE FROM links WHERE tenant_id = ? AND target_type IN (${ITEM_TYPES_SQL}) AND target_id IN ${IDS}`).bind(t, json),
      scope.d1.prepare(`DELETE FROM links WHERE tenant_id = ? AND source_type = 'chunk' AND source_id IN ${CHUNK_ID_STRINGS}`).bind(t, t, json),
      scope.d1.prepare(`DELETE FROM links WHERE tenant_id = ? AND target_type = 'chunk' AND target_id IN ${CHUNK_ID_STRINGS}`).bind(t, t, json),
      uncountKeywordChunks(scope, json),
      scope.d1.prepare(`DELETE FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS}`).bind(t, json),
      scope.d1
        .prepare(
          `UPDATE conversations SET
             message_count = MAX(0, message_count - (SELECT COUNT(*) FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id AND i.id IN ${IDS})),
             tokens = MAX(0, tokens - (SELECT COALESCE(SUM(i.tokens), 0) FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id AND i.id IN ${IDS}))
           WHERE tenant_id = ? AND id IN (SELECT conversation_id FROM items WHERE tenant_id = ? AND conversation_id IS NOT NULL AND id IN ${IDS})`,
        )
        .bind(json, json, t, t, json),
      scope.d1.prepare(`DELETE FROM items WHERE tenant_id = ? AND id IN ${IDS} RETURNING id`).bind(t, json),
    );
  }
  statements.push(...bumpCacheGenerations(scope, new Set(items.map((i) => i.project))));
  const results = await scope.d1.batch<{ id?: string }>(statements);
  const deleted = new Set(results.flatMap((r) => r.results.flatMap((row) => (typeof row.id === "string" ? [row.id] : []))));
  return items.filter((i) => deleted.has(i.id));
}
