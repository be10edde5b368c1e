import { jobQueues, QueueProducer } from "../adapters/queue-producer";
import { readConfig } from "../config";
import { stalledMoves } from "../control/move-records";
import { shardDatabase, shardNames } from "../control/shards";
import { needsSummary } from "../core/conversations/conversations";
import { reindexHeartbeat, reindexLegacyBatches } from "../core/keyword-index/indexing";
import { deleteExpiredKeys } from "../core/memory/idempotency";
import { type ReconcileReport, reconcileVectors } from "../core/memory/reconcile-vectors";
import { unfinishedProjectDeletions } from "../core/ownership/delete-project";
import { unfinishedTenantDeletions } from "../core/ownership/delete-tenant";
import type { Env } from "../env";
import type { JobMessage } from "../messages";
import { noWait, openShard } from "../open-tenant";
import { itemJobsByTenant } from "../shared/item-jobs";

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
 * job chain lost), deletes expired idempotency keys (a bounded number), and runs one bounded pass of D1 ↔ vector
 * index reconciliation (reconcileCron). Tenant deletions and tenant moves whose runner was lost (a crash mid-move)
 * are read from the control database; everything else, shard by shard.
 */
export async function sweepLostJobs(env: Env, now = Date.now()): Promise<number> {
  const [tenants, moves] = await Promise.all([
    unfinishedTenantDeletions(env.CONTROL, now - LOST_JOB_AFTER_MS),
    stalledMoves(env.CONTROL, now - STALLED_MOVE_AFTER_MS),
  ]);
  const producer = new QueueProducer(jobQueues(env));
  await producer.send([
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
  const autoLink = config.conversations.useVectorDb && config.conversations.useGraphDb;
  const [unembedded, unlinked, unsummarized] = await d1.batch<Record<string, string | number>>([
    d1
      .prepare(
        "SELECT tenant_id, id FROM items WHERE embedded_at IS NULL AND created_at < ? ORDER BY tenant_id LIMIT ?",
      )
      .bind(cutoff, SWEEP_LIMIT),
    d1
      .prepare(
        "SELECT tenant_id, id FROM items WHERE embedded_at IS NOT NULL AND linked_at IS NULL AND created_at < ? ORDER BY tenant_id LIMIT ?",
      )
      .bind(autoLink ? cutoff : 0, SWEEP_LIMIT),
    d1
      .prepare(
        "SELECT tenant_id, id, message_count, tokens, summarized_count, summarized_tokens FROM conversations WHERE updated_at < ? AND message_count > summarized_count LIMIT ?",
      )
      .bind(cutoff, SWEEP_LIMIT),
  ]);
  const projects = await unfinishedProjectDeletions(d1, cutoff);
  const messages: JobMessage[] = [
    ...projects.map((p) => ({ type: "delete" as const, tenantId: p.tenantId, project: p.project })),
    ...itemJobsByTenant("embed", unembedded!.results),
    ...itemJobsByTenant("link", unlinked!.results),
    ...unsummarized!.results
      .filter((c) =>
        needsSummary(
          {
            messageCount: c.message_count as number,
            tokens: c.tokens as number,
            summarizedCount: c.summarized_count as number,
            summarizedTokens: c.summarized_tokens as number,
          },
          config.conversations,
        ),
      )
      .map((c) => ({
        type: "summarize" as const,
        tenantId: c.tenant_id as string,
        conversationId: c.id as string,
        messageCount: c.message_count as number,
      })),
  ];
  const producer = new QueueProducer(jobQueues(env));
  await producer.send(messages);
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

/**
 * One bounded reconciliation run of a shard a sweep, continuing where the last one stopped (the shard's
 * reconcile_state); a pass that reaches the end starts again at 0 next time.
 */
export async function reconcileCron(env: Env, shard: string, now = Date.now()): Promise<ReconcileReport> {
  const { d1, services } = openShard(env, shard, noWait);
  const state = await d1.prepare("SELECT cursor FROM reconcile_state WHERE id = 1").first<{ cursor: number }>();
  const report = await reconcileVectors(d1, services, { cursor: state?.cursor ?? 0, now });
  await d1
    .prepare(
      "INSERT INTO reconcile_state (id, cursor, updated_at) VALUES (1, ?1, ?2) ON CONFLICT (id) DO UPDATE SET cursor = ?1, updated_at = ?2",
    )
    .bind(report.next_cursor ?? 0, now)
    .run();
  return report;
}
