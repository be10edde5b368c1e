import { jobProducer } from "../adapters/queue-producer";
import { autoLinking, readConfig } from "../config";
import { stalledMoves } from "../control/move-records";
import { shardDatabase, shardNames } from "../control/shards";
import { lostConversions } from "../core/documents/queued-conversion";
import { reindexHeartbeat, reindexLegacyBatches } from "../core/keyword-index/indexing";
import { deleteExpiredKeys } from "../core/memory/idempotency";
import { unfinishedProjectDeletions } from "../core/ownership/delete-project";
import { unfinishedTenantDeletions } from "../core/ownership/delete-tenant";
import { meterOf } from "../db/metered-d1";
import type { Env } from "../env";
import type { JobMessage } from "../messages";
import { itemJobsByTenant } from "../shared/item-jobs";
import { lostSummaries } from "./lost-summaries";
import { reconcileCron } from "./reconcile-cron";

/** A move whose runner saved nothing for this long is taken to be lost (a job runs ~100 pages in seconds). */
export const STALLED_MOVE_AFTER_MS = 60_000;

/** Items still unembedded this long after writing are taken to have lost their job. */
export const LOST_JOB_AFTER_MS = 10 * 60_000;
const SWEEP_LIMIT = 5000;
/** Statements of expired idempotency keys a shard's sweep deletes (each up to EXPIRED_KEYS_PER_STATEMENT keys). */
const SWEEP_KEY_STATEMENTS = 5;
/** Keyword re-index batches the sweep itself runs; if chunks remain it hands over to a "reindex" job. */
const SWEEP_REINDEX_BATCHES = 5;

/**
 * Cron: re-enqueues jobs that were lost (queue outage, a dead letter after a fix): embedding for
 * unembedded items, auto-link for embedded but unlinked ones, and summaries for conversations past
 * the thresholds with no summary covering them. Jobs are idempotent, so a spurious one is harmless.
 * It also re-indexes chunks written before tenant-private keyword terms, a few batches at a time,
 * and, while some are left and no re-index job chain has run lately, starts one ("reindex" jobs
 * re-queue themselves until none are left). It resumes tenant and project deletions that stalled (their
 * job chain lost) and document conversions whose job was lost (failing those past an hour), deletes expired
 * idempotency keys (a bounded number), and runs one bounded pass of D1 ↔ vector index reconciliation (reconcileCron). Tenant deletions and tenant moves whose runner was lost (a crash mid-move)
 * are read from the control database; everything else, shard by shard.
 */
export async function sweepLostJobs(env: Env, now = Date.now()): Promise<number> {
  const [tenants, moves] = await Promise.all([
    unfinishedTenantDeletions(env.CONTROL, now - LOST_JOB_AFTER_MS),
    stalledMoves(env.CONTROL, now - STALLED_MOVE_AFTER_MS),
  ]);
  await jobProducer(env).send([
    ...tenants.map((tenantId) => ({ type: "delete" as const, tenantId, project: null })),
    ...moves.map((tenantId) => ({ type: "move" as const, tenantId })),
  ]);
  let sent = tenants.length + moves.length;
  for (const shard of shardNames(env)) {
    try {
      sent += await sweepShard(env, shard, now);
    } catch (error) {
      console.error(`sweep of shard ${shard} failed; the next sweep retries`, error);
    }
  }
  return sent;
}

/** One shard's share of the sweep: its lost jobs, stalled project deletions, re-index, expired keys and reconciliation. */
async function sweepShard(env: Env, shard: string, now: number): Promise<number> {
  const d1 = shardDatabase(env, shard);
  const config = readConfig(env);
  const cutoff = now - LOST_JOB_AFTER_MS;
  const autoLink = autoLinking(config.conversations);
  // Both walk the partial index of the unlinked (items_unlinked), in no particular order (the jobs are grouped by tenant
  // here): ordered by tenant, SQLite walked a tenant index of every item instead.
  const [unembedded, unlinked] = await d1.batch<{ tenant_id: string; id: string }>([
    d1
      .prepare(
        "SELECT tenant_id, id FROM items WHERE linked_at IS NULL AND embedded_at IS NULL AND created_at < ? LIMIT ?",
      )
      .bind(cutoff, SWEEP_LIMIT),
    // Auto-linking off: nothing waits for a link job (embedding marks an item linked too).
    ...(autoLink
      ? [
          d1
            .prepare(
              "SELECT tenant_id, id FROM items WHERE embedded_at IS NOT NULL AND linked_at IS NULL AND created_at < ? LIMIT ?",
            )
            .bind(cutoff, SWEEP_LIMIT),
        ]
      : []),
  ]);
  const projects = await unfinishedProjectDeletions(d1, cutoff);
  const conversions = await lostConversions(d1, now, LOST_JOB_AFTER_MS);
  const summaries = await lostSummaries(d1, config.conversations, cutoff);
  const messages: JobMessage[] = [
    ...projects.map((p) => ({ type: "delete" as const, tenantId: p.tenantId, project: p.project })),
    // Per minute, a lost new-items job is sent again as one: embedding, linking and the conversations' thresholds.
    ...itemJobsByTenant(config.jobDispatch === "per-minute" ? "new-items" : "embed", unembedded!.results),
    ...itemJobsByTenant("link", unlinked?.results ?? []),
    ...summaries.messages,
    ...conversions,
  ];
  // Its sends are the shard's pass's, as its queries are (metered-pass.ts).
  const producer = jobProducer(env, meterOf(d1));
  await producer.send(messages);
  await summaries.record?.run();
  try {
    if ((await reindexLegacyBatches(d1, SWEEP_REINDEX_BATCHES)) && (await reindexHeartbeat(d1, now, true))) {
      await producer.send([{ type: "reindex", tenantId: null, shard }]);
    }
  } catch (error) {
    console.error(`keyword re-index of shard ${shard} failed; the next sweep retries`, error);
  }
  try {
    await deleteExpiredKeys(d1, now, SWEEP_KEY_STATEMENTS);
  } catch (error) {
    console.error(`expiry of shard ${shard}'s idempotency keys failed; the next sweep retries`, error);
  }
  try {
    await reconcileCron(env, shard, now);
  } catch (error) {
    console.error(`vector reconciliation of shard ${shard} failed; the next sweep retries`, error);
  }
  return messages.length;
}
