import { type ReconcileReport, reconcileVectors } from "../core/memory/reconcile-vectors";
import { type KeywordMarks, keywordMarksColumns, writeKeywordMarks } from "../db/pass-marks";
import type { Env } from "../env";
import { noWait, openShard } from "../open-tenant";

/** reconcile_state's row of the reconciliation's walk: the chunk id the next run starts after. */
const WALK_ROW = 1;

/**
 * One bounded reconciliation run of a shard a sweep, continuing where the last one stopped; a run that reaches the
 * end starts the next cycle at 0.
 *
 * A cycle walks every chunk of the shard (about two rows read a chunk), so it starts only while something was written
 * since the last cycle that covered it (the keyword write counter, src/core/keyword-index/write-counter.ts: every
 * chunk written, rewritten, moved or deleted moves it). A cycle covers the count read when it started if it judged
 * every chunk it passed: one that met a chunk embedded within the grace period covers nothing new, and the next
 * cycle starts. A shard at rest thus reads two rows a sweep and writes none. What it no longer sees at rest: a
 * vector that Vectorize loses on its own, with nothing written to the shard (a later write starts a cycle, and
 * `POST /admin/reconcile` runs one at any time). A shard without its identity row keeps no count and cycles on.
 */
export async function reconcileCron(env: Env, shard: string, now = Date.now()): Promise<ReconcileReport | null> {
  const { d1, services } = openShard(env, shard, noWait);
  const state = await d1
    .prepare(
      `SELECT i.id AS identity, ${keywordMarksColumns("i")}, w.cursor AS walk
       FROM (SELECT 1) LEFT JOIN shard_identity i ON i.id = 1 LEFT JOIN reconcile_state w ON w.id = ?`,
    )
    .bind(WALK_ROW)
    .first<KeywordMarks & { identity: number | null; walk: number | null }>();
  const marks = state?.identity ? state : null;
  const walk = state?.walk ?? 0;
  if (walk === 0 && marks !== null && marks.written === marks.vectorsWritten) return null;
  const report = await reconcileVectors(d1, services, { cursor: walk, now });
  const next = report.next_cursor ?? 0;
  const statements: D1PreparedStatement[] = [];
  if (next !== walk || state?.walk === null)
    statements.push(
      d1
        .prepare(
          "INSERT INTO reconcile_state (id, cursor, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (id) DO UPDATE SET cursor = ?2, updated_at = ?3",
        )
        .bind(WALK_ROW, next, now),
    );
  if (marks !== null) {
    const covers = report.unjudged > 0 ? null : walk === 0 ? marks.written : marks.vectorsCycleWritten;
    if (report.next_cursor === null && covers !== null)
      statements.push(writeKeywordMarks(d1, { vectorsWritten: covers, vectorsCycleWritten: null }));
    else if (covers !== marks.vectorsCycleWritten)
      statements.push(writeKeywordMarks(d1, { vectorsCycleWritten: covers }));
  }
  if (statements.length > 0) await d1.batch(statements);
  return report;
}
