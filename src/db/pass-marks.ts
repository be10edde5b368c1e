/**
 * The keyword index's write counter (src/core/keyword-index/write-counter.ts) and what each scheduled pass last saw
 * of it, all on shard_identity's one row: a pass learns whether anything was written since it last looked by reading
 * that row, and the minute passes read it once between them (src/jobs/minute-state.ts).
 */
export interface KeywordMarks {
  /** The count now, and when it last moved (null before the first write since migration 0028). */
  written: number;
  writtenAt: number | null;
  /** The count when the last keyword merge finished, and the index's tokens then. */
  mergeWritten: number | null;
  mergeTokens: number | null;
  /** The count when the top postings pass last left nothing due. */
  topsWritten: number | null;
  /** The count the running vector reconciliation cycle covers, and the one the last complete cycle covered. */
  vectorsCycleWritten: number | null;
  vectorsWritten: number | null;
  /** The count the sweep's scan of conversations covered. */
  conversationsWritten: number | null;
  /** The count when the per-minute dispatch last read the items, and the last items rowid it passed. */
  dispatchWritten: number | null;
  dispatchCursor: number | null;
}

type Mark = Exclude<keyof KeywordMarks, "written" | "writtenAt">;

const COLUMNS: Record<keyof KeywordMarks, string> = {
  written: "keyword_written",
  writtenAt: "keyword_written_at",
  mergeWritten: "merge_written",
  mergeTokens: "merge_tokens",
  topsWritten: "tops_written",
  vectorsCycleWritten: "vectors_cycle_written",
  vectorsWritten: "vectors_written",
  conversationsWritten: "conversations_written",
  dispatchWritten: "dispatch_written",
  dispatchCursor: "dispatch_cursor",
};

/** The row's columns as KeywordMarks' fields, for a SELECT over shard_identity aliased `alias`. */
export function keywordMarksColumns(alias: string): string {
  return Object.entries(COLUMNS)
    .map(([field, column]) => `${alias}.${column} AS ${field}`)
    .join(", ");
}

/** The marks; null on a shard without its identity row, which keeps no count (its passes look every time). */
export async function readKeywordMarks(d1: D1Database): Promise<KeywordMarks | null> {
  return d1.prepare(`SELECT ${keywordMarksColumns("i")} FROM shard_identity i WHERE i.id = 1`).first<KeywordMarks>();
}

/** The statement that sets some of the passes' marks. */
export function writeKeywordMarks(d1: D1Database, marks: Partial<Record<Mark, number | null>>): D1PreparedStatement {
  const entries = Object.entries(marks) as [Mark, number | null][];
  return d1
    .prepare(`UPDATE shard_identity SET ${entries.map(([field]) => `${COLUMNS[field]} = ?`).join(", ")} WHERE id = 1`)
    .bind(...entries.map(([, value]) => value));
}
