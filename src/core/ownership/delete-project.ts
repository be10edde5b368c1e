import { IN_JSON, type TenantScope, tenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { ALL_PROJECTS, retireProjectGeneration } from "../context/cache-generation";
import { cacheKeyPrefix } from "../context/semantic-cache";
import { deleteDocumentBatch } from "../documents/delete-document";
import { KEYS_OF_PROJECT } from "../memory/idempotency";
import {
  DELETION_LIMITS,
  type DeletionStep,
  deleteCacheEntries,
  deleteCacheValuesByPrefix,
  deleteItemBatch,
  deleteRows,
} from "./deletion-steps";

/**
 * Records that a project is being deleted (the cron sweep resumes a deletion whose job was lost); the caller
 * has checked that the tenant exists and is not itself being deleted. (Cached contexts stop being served with
 * the first batch of items deleted: deleteItems bumps the project's cache generation.)
 */
export async function beginProjectDeletion(
  d1: D1Database,
  tenantId: string,
  project: string,
  now = Date.now(),
): Promise<void> {
  await d1
    .prepare(
      `INSERT INTO project_deletions (tenant_id, project, updated_at) VALUES (?1, ?2, ?3)
       ON CONFLICT (tenant_id, project) DO UPDATE SET updated_at = excluded.updated_at`,
    )
    .bind(tenantId, project, now)
    .run();
}

/**
 * One bounded step of deleting a project of a tenant, in this order: its items (with chunks, FTS rows,
 * vectors, links; core/memory/delete-items.ts), its conversations with their summaries and links, its
 * cache entries and those built across projects (they may quote it) with their KV values, its usage
 * log, current task, cache generation and link marks, the idempotency keys of calls that wrote to it (a retry after
 * the deletion stores anew rather than answering ids that are gone); last the deletion record. Nothing outside the
 * project is touched but cross-project cache entries, which are rebuilt on demand.
 */
export async function deleteProjectStep(
  d1: D1Database,
  services: Services,
  tenantId: string,
  project: string,
): Promise<DeletionStep> {
  const scope = tenantScope(d1, tenantId);
  const pieces: (() => Promise<number>)[] = [
    () => deleteItemBatch(scope, services, project),
    () => deleteDocumentBatch(scope, services, project),
    () => deleteConversations(scope, project),
    () => deleteCacheEntries(scope, services, [project, ALL_PROJECTS]),
    async () => {
      const values = await deleteCacheValuesByPrefix(services, await cacheKeyPrefix(tenantId, project));
      return values.complete ? 0 : values.deleted;
    },
    () =>
      deleteRows(
        d1,
        [
          "tool_calls",
          "usage_hours",
          "tool_conversation_days",
          "project_tasks",
          "cache_link_marks",
          "memory_events",
          "extraction_windows",
          "project_settings",
        ],
        "tenant_id = ? AND project = ?",
        [tenantId, project],
      ),
    () => deleteRows(d1, ["idempotency_keys"], KEYS_OF_PROJECT, [tenantId, project]),
    // Last, with nothing of the project left to cache: cross-project contexts' generation must still never go back.
    // One batch, done once it ran (run again, it only adds to the cross-project row).
    async () => {
      await d1.batch(retireProjectGeneration(d1, tenantId, project));
      return 0;
    },
  ];
  for (const piece of pieces) {
    const removed = await piece();
    if (removed > 0) return { done: false, removed };
  }
  await d1.prepare("DELETE FROM project_deletions WHERE tenant_id = ? AND project = ?").bind(tenantId, project).run();
  return { done: true, removed: 0 };
}

/** Conversations of the project (their messages are gone by now) with their summaries and links. */
async function deleteConversations(scope: TenantScope, project: string): Promise<number> {
  const { results } = await scope.d1
    .prepare("SELECT id FROM conversations WHERE tenant_id = ? AND project = ? LIMIT ?")
    .bind(scope.tenantId, project, DELETION_LIMITS.items)
    .all<{ id: string }>();
  if (results.length === 0) return 0;
  const ids = JSON.stringify(results.map((r) => r.id));
  const t = scope.tenantId;
  await scope.d1.batch([
    scope.d1.prepare(`DELETE FROM summaries WHERE tenant_id = ? AND conversation_id ${IN_JSON}`).bind(t, ids),
    scope.d1
      .prepare(`DELETE FROM links WHERE tenant_id = ? AND source_type = 'conversation' AND source_id ${IN_JSON}`)
      .bind(t, ids),
    scope.d1
      .prepare(`DELETE FROM links WHERE tenant_id = ? AND target_type = 'conversation' AND target_id ${IN_JSON}`)
      .bind(t, ids),
    scope.d1
      .prepare(`DELETE FROM conversations WHERE tenant_id = ? AND project = ? AND id ${IN_JSON}`)
      .bind(t, project, ids),
  ]);
  return results.length;
}

/** Project deletions requested before `before` and not finished (the sweep resumes them). */
export async function unfinishedProjectDeletions(
  d1: D1Database,
  before: number,
): Promise<{ tenantId: string; project: string }[]> {
  const { results } = await d1
    .prepare("SELECT tenant_id, project FROM project_deletions WHERE updated_at < ? LIMIT 100")
    .bind(before)
    .all<{ tenant_id: string; project: string }>();
  return results.map((r) => ({ tenantId: r.tenant_id, project: r.project }));
}
