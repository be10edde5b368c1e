/**
 * The keyword index's write counter, shard_identity.keyword_written: what was written to or deleted from chunks_fts
 * on this shard, ever, in tokens (at least one a row, so every write moves it), and when it last moved
 * (keyword_written_at). Each statement that writes chunks_fts adds to it in its own batch: a chunk insert on the row
 * it writes anyway (its next chunk id), any other write with one statement more.
 *
 * The scheduled passes compare it with the value they last saw (src/db/pass-marks.ts), so a pass over a shard where
 * nothing was written reads a row or two, not the index: the keyword merge (how much was written since the last
 * merge), the top postings (whether any tenant's statistics moved), the vector reconciliation and the sweep's scan of
 * conversations (whether anything changed since they last looked). A shard without its identity row keeps no count,
 * and its passes look every time.
 */

/** Tokens of `rows` keyword rows of `tokens` tokens, as the counter adds them. */
export function keywordWriteUnits(rows: readonly { tokens: number | null }[]): number {
  return rows.reduce((sum, row) => sum + Math.max(1, row.tokens ?? 0), 0);
}

/** The SET clause that adds `?1` units at time `?2`, for the statements that write the counter's row. */
export const COUNT_KEYWORD_WRITES = "keyword_written = keyword_written + ?1, keyword_written_at = ?2";

/** Adds `units` (keywordWriteUnits) to the counter. */
export function countKeywordWrites(d1: D1Database, units: number): D1PreparedStatement {
  return d1.prepare(`UPDATE shard_identity SET ${COUNT_KEYWORD_WRITES} WHERE id = 1`).bind(units, Date.now());
}

/**
 * Adds the chunks that `chunksWhere` selects (SQL over `chunks`, with `binds`), as they are before the batch deletes or
 * rewrites their keyword rows: run it before those statements.
 */
export function countKeywordWritesOf(d1: D1Database, chunksWhere: string, ...binds: unknown[]): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE shard_identity SET keyword_written = keyword_written +
         (SELECT COALESCE(SUM(MAX(COALESCE(fts_tokens, 0), 1)), 0) FROM chunks WHERE ${chunksWhere}), keyword_written_at = ?
       WHERE id = 1`,
    )
    .bind(...binds, Date.now());
}
