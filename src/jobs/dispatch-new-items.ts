import { type KeywordMarks, writeKeywordMarks } from "../db/pass-marks";
import type { JobQueue } from "../ports";
import { itemJobsByTenant } from "../shared/item-jobs";

/** Items one pass sends jobs for per shard, ~80 a second: a busier shard's items wait a minute more. */
export const DISPATCH_LIMIT = 5000;

/**
 * JOB_DISPATCH=per-minute, every minute on one shard: one new-items job per tenant (up to 500 items a message) for
 * the items written since the last pass that still wait for embedding, which embeds and links them and checks their
 * conversations' summaries and extraction (src/core/memory/new-items.ts). A write's items are thus vector-searchable
 * within two minutes.
 *
 * The cursor is the items' rowid, not their time: a turn may be logged with a time long past, and D1 runs one write
 * at a time, so an item written after the pass read always has a rowid above what it read. It is kept on the shard's
 * identity row with the keyword write counter's count when the pass read (pass-marks.ts): every item is written with
 * its chunks, which move the counter, so a pass that finds the count unchanged reads nothing more. The cursor moves
 * once the jobs are sent: while the queue is down the pass fails and the next one sends everything since. A lost job,
 * and an item whose rowid reuses a deleted newest row's, are the 15-minute sweep's (it re-sends what is pending for 10
 * minutes). A shard without its identity row cannot have written an item.
 */
export async function dispatchNewItems(jobs: JobQueue, d1: D1Database, marks: KeywordMarks | null): Promise<number> {
  if (marks === null || marks.written === marks.dispatchWritten) return 0;
  const cursor = marks.dispatchCursor ?? (await firstCursor(d1));
  // Every item after the cursor is read once, waiting or not (a moved tenant's items arrive embedded): the cursor passes
  // them all.
  const { results } = await d1
    .prepare(
      "SELECT rowid AS seq, tenant_id, id, embedded_at IS NULL AS waiting FROM items WHERE rowid > ? ORDER BY rowid LIMIT ?",
    )
    .bind(cursor, DISPATCH_LIMIT)
    .all<{ seq: number; tenant_id: string; id: string; waiting: 0 | 1 }>();
  const messages = itemJobsByTenant(
    "new-items",
    results.filter((r) => r.waiting === 1),
  );
  if (messages.length > 0) await jobs.send(messages);
  const full = results.length === DISPATCH_LIMIT;
  await writeKeywordMarks(d1, {
    dispatchCursor: results.length > 0 ? results[results.length - 1]!.seq : cursor,
    // A full read leaves the count unseen, so the next pass reads on.
    dispatchWritten: full ? marks.dispatchWritten : marks.written,
  }).run();
  return messages.length;
}

/**
 * A shard's first per-minute pass starts before its oldest item still waiting for embedding (a walk of the partial
 * index of those, once), or after its newest item when none waits.
 */
async function firstCursor(d1: D1Database): Promise<number> {
  const row = await d1
    .prepare(
      `SELECT COALESCE((SELECT MIN(rowid) - 1 FROM items INDEXED BY items_unlinked WHERE linked_at IS NULL AND embedded_at IS NULL),
         (SELECT MAX(rowid) FROM items), 0) AS cursor`,
    )
    .first<{ cursor: number }>();
  return row?.cursor ?? 0;
}
