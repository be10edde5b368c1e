import { remainingQueries } from "../../db/invocation-queries";

/**
 * The keyword index's segments: FTS5 keeps chunks_fts as b-trees (segments), one more for every write transaction,
 * which its automerge folds together only gradually and level by level (small writes leave a segment each). A search
 * looks every term it reads up in each segment, so a shard's searches slow as segments pile up; merging them changes
 * no result, only the time a search takes.
 *
 * The minute pass merges them (`mergeKeywordSegments`) once the pages outside the largest segment are MERGE_SHARE
 * of the index: a merge rewrites the whole index, so merging writes about 1 / MERGE_SHARE pages for each page the
 * writes add, where merging at every pass after a write would rewrite the whole index each minute. Each pass writes
 * at most MERGE_PAGES pages (FTS5's incremental merge carries on where the last stopped), so the statement stays
 * short however large the shard, far inside D1's 30 s.
 */
export const MERGE_SHARE = 0.1;
export const MERGE_PAGES = 1_000;

/** Queries a look takes: the segments' sizes, and the merge. */
const QUERIES_PER_MERGE = 2;

/** The segments of the shard's keyword index and their sizes in leaf pages (chunks_fts_idx: about a row a leaf page). */
export async function keywordSegments(d1: D1Database): Promise<{ segment: number; pages: number }[]> {
  const { results } = await d1
    .prepare("SELECT segid AS segment, COUNT(*) AS pages FROM chunks_fts_idx GROUP BY segid ORDER BY segid")
    .all<{ segment: number; pages: number }>();
  return results;
}

/**
 * Whether a merge is due: more than one segment, and MERGE_SHARE of the pages outside the largest (the index
 * merged last, which later writes are small beside).
 */
export function mergeDue(segments: { pages: number }[]): boolean {
  if (segments.length < 2) return false;
  const total = segments.reduce((sum, s) => sum + s.pages, 0);
  const largest = Math.max(...segments.map((s) => s.pages));
  return total - largest >= MERGE_SHARE * total;
}

/**
 * One pass over a shard: merges its keyword index's segments when due, MERGE_PAGES pages at most; returns the
 * segments it found when it merged, else 0. A negative page count makes FTS5 merge every segment, whatever its
 * level, into one; a merge that a pass leaves unfinished is carried on by the next while the share stays due.
 */
export async function mergeKeywordSegments(d1: D1Database, maxPages = MERGE_PAGES): Promise<number> {
  if (remainingQueries() < QUERIES_PER_MERGE) return 0;
  const segments = await keywordSegments(d1);
  if (!mergeDue(segments)) return 0;
  await d1.prepare("INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('merge', ?)").bind(-maxPages).run();
  return segments.length;
}
