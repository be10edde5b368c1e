import { remainingQueries } from "../../db/invocation-queries";
import { type KeywordMarks, readKeywordMarks } from "../../db/pass-marks";

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
 *
 * Counting the segments' pages reads a row a leaf page (thousands in a large shard), so the pass first asks the
 * keyword write counter (write-counter.ts): only once what was written since the last merge is MERGE_SHARE of the
 * index as then merged does it count pages, to merge or, when they are under the share after all (FTS5's automerge
 * folded them), to record the merge as done. A pass over a shard with less written reads the counter's row, or
 * nothing where its marks were read for it.
 */
export const MERGE_SHARE = 0.1;
export const MERGE_PAGES = 1_000;

/** Queries a look takes: the write counter, the segments' sizes, and the merge or its record. */
const QUERIES_PER_MERGE = 3;

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
 * Whether what was written to the index since its last merge (the write counter's units: tokens written or deleted)
 * is MERGE_SHARE of the index as it will be, the index being its tokens at that merge plus them. A shard that keeps no
 * count is always worth a look.
 */
export function mergeDueByWrites(marks: KeywordMarks | null): boolean {
  if (marks === null) return true;
  const since = marks.written - (marks.mergeWritten ?? 0);
  return since > 0 && since >= MERGE_SHARE * ((marks.mergeTokens ?? 0) + since);
}

/**
 * One pass over a shard: merges its keyword index's segments when due, MERGE_PAGES pages at most; returns the
 * segments it found when it merged, else 0. A negative page count makes FTS5 merge every segment, whatever its
 * level, into one; a merge that a pass leaves unfinished is carried on by the next while the share stays due. Once
 * the pages outside the largest segment are under the share, the merge is recorded as done, with the write count it
 * covers and the index's tokens then. `known`: the shard's marks where the caller read them.
 */
export async function mergeKeywordSegments(
  d1: D1Database,
  maxPages = MERGE_PAGES,
  known?: KeywordMarks | null,
): Promise<number> {
  if (remainingQueries() < QUERIES_PER_MERGE) return 0;
  const marks = known === undefined ? await readKeywordMarks(d1) : known;
  if (!mergeDueByWrites(marks)) return 0;
  const segments = await keywordSegments(d1);
  if (mergeDue(segments)) {
    await d1.prepare("INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('merge', ?)").bind(-maxPages).run();
    return segments.length;
  }
  // Writes during a merge that left it unfinished count as merged: at most a few minutes' worth, under the share.
  if (marks !== null)
    await d1
      .prepare(
        "UPDATE shard_identity SET merge_written = ?, merge_tokens = (SELECT COALESCE(SUM(tokens), 0) FROM keyword_stats) WHERE id = 1",
      )
      .bind(marks.written)
      .run();
  return 0;
}
