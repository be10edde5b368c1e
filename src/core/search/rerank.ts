import type { Services } from "../../ports";

/**
 * Search's optional last stage: the reranker (a cross-encoder, RERANK_MODEL) reorders the best fused
 * candidates (at least `limit`) by reading query and text together; the rest follow in fused order, for a caller
 * that takes more than `limit` (search.ts, when results fold). Without a reranker, or if it fails (the search still
 * answers, in fused order), the fused order stands.
 */
export async function rerankOrder<T>(
  services: Services,
  query: string,
  ranked: T[],
  limit: number,
  text: (candidate: T) => string,
): Promise<T[]> {
  const reranker = services.reranker;
  const candidates = services.config.rerank?.candidates ?? 0;
  if (!reranker || ranked.length < 2) return ranked;
  const pool = ranked.slice(0, Math.max(limit, candidates));
  let scores: number[];
  try {
    scores = await reranker.rerank(query, pool.map(text));
  } catch (error) {
    console.error("rerank failed; keeping the fused order", error);
    return ranked;
  }
  return [
    ...pool
      .map((candidate, i) => ({ candidate, score: scores[i]!, i }))
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .map((r) => r.candidate),
    ...ranked.slice(pool.length),
  ];
}
