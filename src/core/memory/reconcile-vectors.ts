import { IN_JSON } from "../../db/scope";
import type { Services, StoredVectorId } from "../../ports";
import { itemJobs } from "../../shared/item-jobs";

/** Chunk ids one reconciliation run examines at most (from D1 and from the index's listing each). */
export const RECONCILE_BATCH = 500;
/**
 * Chunks of items embedded less than this long ago are not judged: Vectorize makes writes visible after
 * a delay, and a just-embedded chunk must not look like one whose vector was lost.
 */
export const RECONCILE_GRACE_MS = 10 * 60_000;

export interface ReconcileReport {
  checked: number;
  missing_vectors_requeued: number;
  orphan_vectors_deleted: number;
  /** Chunks embedded within RECONCILE_GRACE_MS, not judged this time. */
  unjudged: number;
  /** Where the next run starts; null when this run reached the end (the next pass starts again at 0). */
  next_cursor: number | null;
}

/**
 * One bounded run of D1 ↔ vector index reconciliation over chunk ids in (cursor, …]: chunk ids are
 * global and vector ids are chunk ids, so one cursor walks both sides. It reads the next `limit` chunks
 * from D1 and the next `limit` ids from the index's listing (VectorIndex.listIds), takes the range both
 * cover, and then
 * - chunks of items embedded (before the grace period) whose vector the index does not return
 *   (getVectors: Vectorize getByIds) have their items marked unembedded and an embed job queued;
 * - listed vectors whose chunk is gone from D1 are deleted.
 */
export async function reconcileVectors(
  d1: D1Database,
  services: Services,
  options: { tenantId?: string; cursor: number; limit?: number; now?: number },
): Promise<ReconcileReport> {
  const limit = options.limit ?? RECONCILE_BATCH;
  const tenant = options.tenantId === undefined ? "" : " AND c.tenant_id = ?";
  const tenantParams = options.tenantId === undefined ? [] : [options.tenantId];
  const [{ results: chunks }, listed] = await Promise.all([
    d1
      .prepare(
        `SELECT c.id, c.tenant_id, c.item_id, i.embedded_at FROM chunks c LEFT JOIN items i ON i.tenant_id = c.tenant_id AND i.id = c.item_id
         WHERE c.id > ?${tenant} ORDER BY c.id LIMIT ?`,
      )
      .bind(options.cursor, ...tenantParams, limit)
      .all<{ id: number; tenant_id: string; item_id: string; embedded_at: number | null }>(),
    services.vectors.listIds({ tenantId: options.tenantId, afterChunkId: options.cursor, limit }),
  ]);
  // The range both sides cover: up to the last id read from a side that had more to give.
  let upTo = Infinity;
  if (chunks.length === limit) upTo = Math.min(upTo, chunks[chunks.length - 1]!.id);
  if (listed.length === limit) upTo = Math.min(upTo, listed[listed.length - 1]!.chunkId);
  const inRange = chunks.filter((c) => c.id <= upTo);
  const vectors = listed.filter((v) => v.chunkId <= upTo);

  const judgedBefore = (options.now ?? Date.now()) - RECONCILE_GRACE_MS;
  const embedded = inRange.filter((c) => c.embedded_at !== null && c.embedded_at < judgedBefore);
  const unjudged = inRange.filter((c) => c.embedded_at !== null && c.embedded_at >= judgedBefore).length;
  const missing = await chunksWithoutVectors(services, embedded);
  await requeueEmbedding(d1, services, missing);

  const known = new Set(inRange.map((c) => `${c.tenant_id}:${c.id}`));
  const orphans = await stillOrphaned(
    d1,
    vectors.filter((v) => !known.has(`${v.tenantId}:${v.chunkId}`)),
  );
  for (const [tenantId, ids] of byTenant(
    orphans,
    (v) => v.tenantId,
    (v) => v.chunkId,
  ))
    await services.vectors.delete(tenantId, ids);

  return {
    checked: new Set([...inRange.map((c) => c.id), ...vectors.map((v) => v.chunkId)]).size,
    missing_vectors_requeued: missing.length,
    orphan_vectors_deleted: orphans.length,
    unjudged,
    next_cursor: upTo === Infinity ? null : upTo,
  };
}

type ChunkRow = { id: number; tenant_id: string; item_id: string };

async function chunksWithoutVectors(services: Services, chunks: ChunkRow[]): Promise<ChunkRow[]> {
  const missing: ChunkRow[] = [];
  for (const [tenantId, rows] of byTenant(
    chunks,
    (c) => c.tenant_id,
    (c) => c,
  )) {
    const found = await services.vectors.getVectors(
      tenantId,
      rows.map((c) => c.id),
    );
    missing.push(...rows.filter((c) => !found.has(c.id)));
  }
  return missing;
}

/** Marks the items unembedded (so the sweep retries if this job is lost too) and queues their embedding. */
async function requeueEmbedding(d1: D1Database, services: Services, missing: ChunkRow[]): Promise<void> {
  for (const [tenantId, itemIds] of byTenant(
    missing,
    (c) => c.tenant_id,
    (c) => c.item_id,
  )) {
    const unique = [...new Set(itemIds)];
    await d1
      .prepare(`UPDATE items SET embedded_at = NULL WHERE tenant_id = ? AND id ${IN_JSON}`)
      .bind(tenantId, JSON.stringify(unique))
      .run();
    await services.jobs.send(itemJobs("embed", tenantId, unique));
  }
}

/** A chunk written between the two reads is not an orphan: ask D1 again just before deleting. */
async function stillOrphaned(d1: D1Database, candidates: StoredVectorId[]): Promise<StoredVectorId[]> {
  if (candidates.length === 0) return [];
  const { results } = await d1
    .prepare(`SELECT id, tenant_id FROM chunks WHERE id ${IN_JSON}`)
    .bind(JSON.stringify(candidates.map((v) => v.chunkId)))
    .all<{ id: number; tenant_id: string }>();
  const alive = new Set(results.map((r) => `${r.tenant_id}:${r.id}`));
  return candidates.filter((v) => !alive.has(`${v.tenantId}:${v.chunkId}`));
}

function byTenant<T, V>(rows: T[], tenantOf: (row: T) => string, value: (row: T) => V): Map<string, V[]> {
  const out = new Map<string, V[]>();
  for (const row of rows) {
    const list = out.get(tenantOf(row));
    if (list) list.push(value(row));
    else out.set(tenantOf(row), [value(row)]);
  }
  return out;
}
