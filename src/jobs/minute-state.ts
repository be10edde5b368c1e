import { type KeywordMarks, keywordMarksColumns } from "../db/pass-marks";

/** What the minute passes need to know of a shard before deciding whether they have anything to do. */
export interface MinuteState {
  /** The keyword write counter and the passes' marks of it; null on a shard without its identity row. */
  marks: KeywordMarks | null;
  /** The recent-jobs pass's cursor (reconcile_state row 2): the newest write time it has looked at. */
  recentCursor: number | null;
  /** Whether a conversation's extraction or a failed window's retry is due (extraction-recovery.ts). */
  extractionDue: boolean;
}

/** reconcile_state holds one cursor per background pass, by id: 1 is the vector reconciliation, 2 the recent jobs. */
export const RECENT_JOBS_ROW = 2;

/**
 * The minute passes' reads of each shard's state, one statement a shard for all three passes (four rows: the shard's
 * identity row with the write counter and the marks, the recent-jobs cursor, and one probe of each partial index of
 * due extraction): at rest that statement is all a minute costs. Made once per cron invocation; charged to the pass
 * that asks first.
 */
export class MinuteStates {
  private readonly reads = new Map<string, Promise<MinuteState>>();

  constructor(private readonly now: number) {}

  of(d1: D1Database, shard: string): Promise<MinuteState> {
    let read = this.reads.get(shard);
    if (!read) {
      read = readMinuteState(d1, this.now);
      // A failed read is not kept: the next pass asks again.
      read.catch(() => this.reads.delete(shard));
      this.reads.set(shard, read);
    }
    return read;
  }
}

async function readMinuteState(d1: D1Database, now: number): Promise<MinuteState> {
  const row = await d1
    .prepare(
      `SELECT i.id AS identity, ${keywordMarksColumns("i")}, r.cursor AS recentCursor,
         EXISTS (SELECT 1 FROM conversations WHERE extract_due_at <= ?1)
           OR EXISTS (SELECT 1 FROM documents WHERE extract_due_at <= ?1) AS extractDue,
         EXISTS (SELECT 1 FROM extraction_windows WHERE retry_at <= ?1) AS retryDue
       FROM (SELECT 1) LEFT JOIN shard_identity i ON i.id = 1 LEFT JOIN reconcile_state r ON r.id = ?2`,
    )
    .bind(now, RECENT_JOBS_ROW)
    .first<
      KeywordMarks & { identity: number | null; recentCursor: number | null; extractDue: 0 | 1; retryDue: 0 | 1 }
    >();
  if (!row) throw new Error("the minute state statement answered no row");
  const { identity, recentCursor, extractDue, retryDue, ...marks } = row;
  return { marks: identity === null ? null : marks, recentCursor, extractionDue: extractDue === 1 || retryDue === 1 };
}
