/** BM25 as FTS5's bm25() computes it (scores.ts): column weights of chunks_fts (content, context), k1 and b. */
export const CONTEXT_WEIGHT = 0.5;
const K1 = 1.2;
const B = 0.75;

/** A posting's weight in its chunk (chunks_fts_instance as v): content counts 1, context CONTEXT_WEIGHT. */
export const columnWeight = `CASE v.col WHEN 'content' THEN 1.0 ELSE ${CONTEXT_WEIGHT} END`;

/** BM25's term frequency part, in the worker: a frequency, the chunk's length and the average length (as saturatedSql). */
export function saturated(f: number, len: number, avgdl: number): number {
  return (f * (K1 + 1)) / (f + K1 * (1 - B + (B * len) / avgdl));
}

/** BM25's term frequency part: SQL of the frequency, the chunk's length (NULL: average) and the average length. */
export const saturatedSql = (f: string, len: string, avgdl: string) =>
  `${f} * ${K1 + 1} / (${f} + ${K1} * (${1 - B} + ${B} * COALESCE(${len}, ${avgdl}) / ${avgdl}))`;
