import { jobProducer } from "../adapters/queue-producer";
import { autoLinking, readConfig } from "../config";
import { shardDatabase, shardNames } from "../control/shards";
import { meterOf } from "../db/metered-d1";
import type { Env } from "../env";
import { itemJobsByTenant } from "../shared/item-jobs";
import { dispatchNewItems } from "./dispatch-new-items";
import { recoverExtraction } from "./extraction-recovery";
import { MinuteStates, RECENT_JOBS_ROW } from "./minute-state";
import { LOST_JOB_AFTER_MS } from "./sweep";

/** The cron that runs this pass (wrangler.toml [triggers]); the other one runs the full sweep (sweep.ts). */
export const RECENT_JOBS_CRON = "* * * * *";

/**
 * How old an unembedded (or embedded but unlinked) item is when this pass first looks at it. A queue delivers a
 * job in seconds and the consumer embeds a batch in well under a minute, so an item still pending at this age has
 * most likely lost its job: the send failed after the write (queue down), or the process died between the two.
 */
export const RECENT_JOB_GRACE_MS = 2 * 60_000;
/** Items one pass reads per list and shard; more wait for the next minute (the cursor stops at the last one read). */
const PASS_LIMIT = 2000;

/**
 * Every minute: sends due extraction jobs (a quiet conversation's last window, or a lost job) and due retries of
 * failed windows (extraction-recovery.ts). With JOB_DISPATCH=per-minute it then sends the jobs of the items written
 * since (dispatch-new-items.ts); per write, the embed and link jobs of items written since the last pass that are still pending
 * RECENT_JOB_GRACE_MS after their write. Each shard keeps a cursor (the newest write time it has looked at), which
 * moves only once the jobs are sent: while the queue is down the pass fails and the next one, after the queue is
 * back, sends everything since. A lost job is thus re-sent 2–3 minutes after its write, or within a minute of the
 * queue's recovery; an item whose re-sent job is lost too is left to the 15-minute sweep, which re-sends everything
 * pending for 10 minutes. Jobs are idempotent: an item embedded meanwhile costs its job one read.
 */
export async function recoverRecentJobs(env: Env, now = Date.now(), states = new MinuteStates(now)): Promise<number> {
  let sent = 0;
  for (const shard of shardNames(env)) {
    try {
      sent += await recoverShard(env, shard, now, states);
    } catch (error) {
      console.error(`recent-jobs pass of shard ${shard} failed; the next pass retries from the same point`, error);
    }
  }
  return sent;
}

type PendingRow = { tenant_id: string; id: string; created_at: number };

async function recoverShard(env: Env, shard: string, now: number, states: MinuteStates): Promise<number> {
  const d1 = shardDatabase(env, shard);
  // Its sends are the shard's pass's, as its queries are (metered-pass.ts).
  const producer = jobProducer(env, meterOf(d1));
  const config = readConfig(env);
  const until = now - RECENT_JOB_GRACE_MS;
  const state = await states.of(d1, shard);
  const extraction = state.extractionDue ? await recoverExtraction(d1, now) : [];
  if (extraction.length > 0) await producer.send(extraction);
  // Per minute, writes send no jobs: this pass sends them (dispatch-new-items.ts), and lost ones are the sweep's.
  if (config.jobDispatch === "per-minute")
    return extraction.length + (await dispatchNewItems(producer, d1, state.marks));
  // A first pass looks back no further than the full sweep's horizon: older items are that sweep's.
  const from = state.recentCursor ?? now - LOST_JOB_AFTER_MS;
  // Every item is written with its chunks, which move the keyword write counter's time: with the cursor past that
  // time, no item can lie after it, and the pass reads nothing more.
  const lastWrite = state.marks?.writtenAt ?? 0;
  if (from >= until || (state.marks !== null && from >= lastWrite)) return extraction.length;
  const autoLink = autoLinking(config.conversations);
  // Both walk the partial index of the unlinked (items_unlinked) by created_at: a range of the pending, never the whole
  // table.
  const [unembedded, unlinked] = await d1.batch<PendingRow>([
    d1
      .prepare(
        "SELECT tenant_id, id, created_at FROM items WHERE linked_at IS NULL AND embedded_at IS NULL AND created_at > ? AND created_at <= ? ORDER BY created_at LIMIT ?",
      )
      .bind(from, until, PASS_LIMIT),
    // Auto-linking off: nothing waits for a link job.
    ...(autoLink
      ? [
          d1
            .prepare(
              "SELECT tenant_id, id, created_at FROM items WHERE linked_at IS NULL AND created_at > ? AND created_at <= ? AND embedded_at IS NOT NULL ORDER BY created_at LIMIT ?",
            )
            .bind(from, until, PASS_LIMIT),
        ]
      : []),
  ]);
  const lists = [unembedded!.results, unlinked?.results ?? []];
  const messages = [...itemJobsByTenant("embed", lists[0]!), ...itemJobsByTenant("link", lists[1]!)];
  await producer.send(messages);
  // A full list stops the cursor at its last row; items of that very millisecond past the limit fall to the full sweep.
  const reached = lists.filter((rows) => rows.length === PASS_LIMIT).map((rows) => rows[rows.length - 1]!.created_at);
  const cursor = reached.length > 0 ? Math.min(...reached) : until;
  // Nothing found: the next pass reads the same range and the new minute as cheaply (only the pending are indexed, and
  // it passes each as soon as it finds it), so the cursor is written only once it has passed something, or once it
  // passes the last write, after which the passes read no items until the next write.
  const passedLastWrite = state.marks !== null && cursor >= lastWrite;
  if (lists.every((rows) => rows.length === 0) && !passedLastWrite) return extraction.length;
  await d1
    .prepare(
      "INSERT INTO reconcile_state (id, cursor, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (id) DO UPDATE SET cursor = ?2, updated_at = ?3",
    )
    .bind(RECENT_JOBS_ROW, cursor, now)
    .run();
  return messages.length + extraction.length;
}
