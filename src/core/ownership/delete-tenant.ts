import { IN_JSON, tenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { cacheKeyPrefix } from "../context/semantic-cache";
import { deleteDocumentBatch } from "../documents/delete-document";
import type { DeletionStores } from "./deletion-steps";
import {
  type DeletionStep,
  deleteCacheEntries,
  deleteCacheValuesByPrefix,
  deleteItemBatch,
  deleteOrphanChunks,
  deleteRows,
  deleteTenantVectors,
} from "./deletion-steps";

/**
 * Tables cleared by tenant_id once the tenant's items, chunks, vectors, cache values and keys are gone.
 * A new tenant-owned table must be added here (test/ownership-delete.test.ts lists every table with a
 * tenant_id column from sqlite_master and fails on one left with rows).
 */
export const TENANT_TABLES = [
  "summaries",
  "conversations",
  "links",
  "project_tasks",
  "cache_entries",
  "cache_generations",
  "cache_link_clock",
  "cache_link_marks",
  "cache_counters",
  "keyword_stats",
  "keyword_blocks",
  "keyword_block_changes",
  "keyword_block_scans",
  "tool_calls",
  "usage_hours",
  "tool_conversation_days",
  "local_vectors",
  "vector_ids",
  "project_deletions",
  "memory_sources",
  "memory_events",
  "extraction_windows",
  "project_settings",
  "idempotency_keys",
  // Last: the triggers have brought it to zeros as the items went.
  "tenant_usage",
] as const;

/** Revokes a deleted key's OAuth grants (src/oauth/key-grants.ts); passed in, as core does not know OAuth. */
export type ForgetKeys = (keyIds: string[]) => Promise<void>;

export type TenantDeletionState = "started" | "deleting" | "absent";

/**
 * Marks the tenant as being deleted and revokes its keys in one batch, so they (and OAuth tokens issued
 * through them) are refused from this moment, before any data is removed. "absent": no such tenant
 * (never existed, or already deleted).
 */
export async function beginTenantDeletion(
  d1: D1Database,
  tenantId: string,
  now = Date.now(),
): Promise<TenantDeletionState> {
  const [marked] = await d1.batch<{ previous: number | null }>([
    d1
      .prepare(
        "UPDATE tenants SET deleting_at = COALESCE(deleting_at, ?1) WHERE id = ?2 RETURNING deleting_at <> ?1 AS previous",
      )
      .bind(now, tenantId),
    d1.prepare("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE tenant_id = ?").bind(now, tenantId),
  ]);
  const row = marked!.results[0];
  if (!row) return "absent";
  return row.previous ? "deleting" : "started";
}

/**
 * One bounded step of deleting a tenant: the first kind of data that is left, at most one batch of it
 * (DELETION_LIMITS), in this order: items (with chunks, FTS rows, vectors, links), chunks without items,
 * vectors the index still lists, cache values in KV, API keys (their OAuth grants first), every other
 * table (TENANT_TABLES), and last the tenant row with its job failures. Run it until `done`; any step may
 * be the last one that ran before an interruption.
 */
export async function deleteTenantStep(
  stores: DeletionStores,
  services: Services,
  tenantId: string,
  forgetKeys: ForgetKeys,
): Promise<DeletionStep> {
  const { control, data: d1 } = stores;
  const scope = tenantScope(d1, tenantId);
  const pieces: (() => Promise<number>)[] = [
    () => deleteItemBatch(scope, services, null),
    () => deleteOrphanChunks(scope),
    () => deleteDocumentBatch(scope, services, null),
    () => deleteTenantVectors(scope, services),
    () => deleteCacheEntries(scope, services, null),
    async () => {
      const values = await deleteCacheValuesByPrefix(services, await cacheKeyPrefix(tenantId));
      return values.complete ? 0 : values.deleted;
    },
    () => deleteKeys(control, tenantId, forgetKeys),
    () => deleteRows(d1, TENANT_TABLES, "tenant_id = ?", [tenantId]),
  ];
  for (const piece of pieces) {
    const removed = await piece();
    if (removed > 0) return { done: false, removed };
  }
  const [, gone] = await control.batch([
    control.prepare("DELETE FROM job_failures WHERE tenant_id = ?").bind(tenantId),
    control.prepare("DELETE FROM tenants WHERE id = ?").bind(tenantId),
  ]);
  return { done: true, removed: gone!.meta.changes };
}

async function deleteKeys(d1: D1Database, tenantId: string, forgetKeys: ForgetKeys): Promise<number> {
  const { results } = await d1
    .prepare("SELECT id FROM api_keys WHERE tenant_id = ? LIMIT 100")
    .bind(tenantId)
    .all<{ id: string }>();
  if (results.length === 0) return 0;
  const ids = results.map((r) => r.id);
  await forgetKeys(ids);
  await d1
    .prepare(`DELETE FROM api_keys WHERE +tenant_id = ? AND id ${IN_JSON}`)
    .bind(tenantId, JSON.stringify(ids))
    .run();
  return ids.length;
}

/** Tenants whose deletion started before `before` and is not finished (the sweep resumes them). */
export async function unfinishedTenantDeletions(d1: D1Database, before: number): Promise<string[]> {
  const { results } = await d1
    .prepare("SELECT id FROM tenants WHERE deleting_at IS NOT NULL AND deleting_at < ? LIMIT 100")
    .bind(before)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}
