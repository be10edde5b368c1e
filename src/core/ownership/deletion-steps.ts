import { IN_JSON, type TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { deleteCacheValues, kvKeys, RETURNED } from "../context/semantic-cache";
import { recordBlockChanges } from "../keyword-index/block-build";
import { countKeywordWritesOf } from "../keyword-index/write-counter";
import { deleteItems } from "../memory/delete-items";
import { SEGMENT_KEY_COLUMNS, type SegmentKeyRow, segmentKeyOf } from "../working-set/segments";

/**
 * Where a deletion works: `control` holds the tenant row, its keys and job failures; `data` holds everything
 * the tenant stores (the caller picks the database that holds it).
 */
export interface DeletionStores {
  control: D1Database;
  data: D1Database;
}

/**
 * The bounded pieces tenant and project deletion are made of. Each removes at most a fixed number of
 * rows (or KV keys, or vectors) and says how many it removed, so a step is cheap whatever the tenant's
 * size and a deletion interrupted anywhere resumes by running the pieces again: what is left is the state.
 */
export const DELETION_LIMITS = {
  /** Items a step deletes (with their chunks, FTS rows, vectors and links: core/memory/delete-items.ts). */
  items: 500,
  /** Rows per table a step deletes. */
  rows: 2000,
  /** Vector ids a step deletes through the port. */
  vectors: 1000,
  /** KV cache values a step deletes (one KV call each). */
  cacheValues: 200,
} as const;

/** What one step did; `done` when nothing of the tenant (or project) is left. */
export interface DeletionStep {
  done: boolean;
  removed: number;
}

/** Deletes up to DELETION_LIMITS.items items of the tenant (of one project, if given). */
export async function deleteItemBatch(scope: TenantScope, services: Services, project: string | null): Promise<number> {
  const { results } = await scope.d1
    .prepare(
      `SELECT ${SEGMENT_KEY_COLUMNS} FROM items WHERE tenant_id = ?${project === null ? "" : " AND project = ?"} LIMIT ?`,
    )
    .bind(scope.tenantId, ...(project === null ? [] : [project]), DELETION_LIMITS.items)
    .all<SegmentKeyRow>();
  if (results.length === 0) return 0;
  const keys = results.map(segmentKeyOf);
  // Their conversations go too: no summary is rebuilt, no message context refreshed.
  await deleteItems(scope, services, keys, { conversationsGoToo: true });
  return results.length;
}

/** Chunks whose item is gone (a write or delete cut short), with their FTS rows. */
export async function deleteOrphanChunks(scope: TenantScope): Promise<number> {
  const { results } = await scope.d1
    .prepare(
      "SELECT c.id FROM chunks c WHERE c.tenant_id = ? AND NOT EXISTS (SELECT 1 FROM items i WHERE i.tenant_id = c.tenant_id AND i.id = c.item_id) LIMIT ?",
    )
    .bind(scope.tenantId, DELETION_LIMITS.rows)
    .all<{ id: number }>();
  if (results.length === 0) return 0;
  const ids = JSON.stringify(results.map((r) => r.id));
  await scope.d1.batch([
    countKeywordWritesOf(scope.d1, `id ${IN_JSON}`, ids),
    recordBlockChanges(scope.d1, `+tenant_id = ? AND id ${IN_JSON}`, scope.tenantId, ids),
    scope.d1.prepare(`DELETE FROM chunks_fts WHERE rowid ${IN_JSON}`).bind(ids),
    scope.d1.prepare(`DELETE FROM chunks WHERE +tenant_id = ? AND id ${IN_JSON}`).bind(scope.tenantId, ids),
  ]);
  return results.length;
}

/** Vectors the index still holds for the tenant (their chunks are gone by now): through the port. */
export async function deleteTenantVectors(scope: TenantScope, services: Services): Promise<number> {
  const ids = await services.vectors.listIds({
    tenantId: scope.tenantId,
    afterChunkId: 0,
    limit: DELETION_LIMITS.vectors,
  });
  if (ids.length > 0)
    await services.vectors.delete(
      scope.tenantId,
      ids.map((v) => v.chunkId),
    );
  return ids.length;
}

/** Cache entries of the given projects (null = all): index rows and values, those in KV too. */
export async function deleteCacheEntries(
  scope: TenantScope,
  services: Services,
  projects: readonly string[] | null,
): Promise<number> {
  const where = projects === null ? "" : ` AND project ${IN_JSON}`;
  const { results } = await scope.d1
    .prepare(`SELECT ${RETURNED} FROM cache_entries WHERE tenant_id = ?${where} LIMIT ?`)
    .bind(scope.tenantId, ...(projects === null ? [] : [JSON.stringify(projects)]), DELETION_LIMITS.cacheValues)
    .all<{ key: string; in_kv: number }>();
  if (results.length === 0) return 0;
  const keys = results.map((r) => r.key);
  await deleteCacheValues(services.cache, kvKeys(results));
  await scope.d1
    .prepare(`DELETE FROM cache_entries WHERE tenant_id = ? AND key ${IN_JSON}`)
    .bind(scope.tenantId, JSON.stringify(keys))
    .run();
  return keys.length;
}

/**
 * KV values under a prefix that the index no longer names (index rows pruned without their values left them behind).
 * Returns how many were deleted; KV listing is eventually consistent, so a repeat may see some again.
 */
export async function deleteCacheValuesByPrefix(
  services: Services,
  prefix: string,
): Promise<{ deleted: number; complete: boolean }> {
  const page = await services.cache.list({ prefix, limit: DELETION_LIMITS.cacheValues });
  await deleteCacheValues(
    services.cache,
    page.keys.map((k) => k.name),
  );
  return { deleted: page.keys.length, complete: page.list_complete };
}

/** Up to DELETION_LIMITS.rows rows of each table matching `where` (bound to `params`); how many went. */
export async function deleteRows(
  d1: D1Database,
  tables: readonly string[],
  where: string,
  params: unknown[],
): Promise<number> {
  const results = await d1.batch(
    tables.map((table) =>
      d1
        .prepare(
          `DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${where} LIMIT ${DELETION_LIMITS.rows})`,
        )
        .bind(...params),
    ),
  );
  return results.reduce((sum, r) => sum + r.meta.changes, 0);
}
