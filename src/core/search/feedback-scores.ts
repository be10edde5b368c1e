import { keywordCode, storedTerm } from "../../shared/fts-text";
import { CONTEXT_WEIGHT, saturated } from "../keyword-index/bm25";
import { forwardFreq, forwardKey, termFreqs } from "../keyword-index/term-freqs";

/**
 * Relevance feedback's scores (expansion.ts), computed in the worker from what the search already holds: the
 * chunks' forward index (chunks.term_freqs, term-freqs.ts) and length come with their rows, and D1 gives only each
 * candidate word's chunk count and the tenant's totals. The same BM25 as the keyword list (keyword-index/scores.ts: FTS5's
 * formula, content 1, context CONTEXT_WEIGHT, IDF floored at 1e-6), over the first hits and the chunks around them.
 * In the worker, not as a SQL list reading each kept word's postings (or each chunk's forward index): the kept words
 * are few and the chunks' rows are already at hand, so the worker scores them at little cost, where the SQL list is
 * a large share of the expansion statement's time.
 */

/** Feedback words kept: the strongest by weight x IDF. */
export const FEEDBACK_TERMS = 10;

/** A candidate word: the tenant's stored term, its forward index key, and its weight in the best hits. */
export interface FeedbackCandidate {
  term: string;
  key: string;
  weight: number;
}

/** What feedback reads of a chunk: its keyword length (null: indexed before tenant terms) and forward index. */
export interface FeedbackChunk {
  chunk_id: number;
  chunk_content: string;
  fts_tokens: number | null;
  /** chunks.term_freqs; null for a chunk written before it existed, until the sweep gives it one (keyword-index/indexing.ts). */
  term_freqs: string | null;
  /** The chunk's context where it has no forward index (null otherwise), so one can be built here. */
  unindexed_context: string | null;
}

/** The tenant's keyword totals: chunk count and average length (keyword-index/scores.ts, keyword_totals). */
export interface KeywordTotals {
  n: number;
  avgdl: number;
}

/**
 * Candidate words as the tenant's index stores them; a word whose stem is a stopword's is left out (the forward
 * index does not hold it, and a query drops it too).
 */
export function feedbackCandidates(tenantId: string, words: { token: string; weight: number }[]): FeedbackCandidate[] {
  const code = keywordCode(tenantId);
  return words.flatMap(({ token, weight }) => {
    const term = storedTerm(code, token);
    const key = forwardKey(code, term);
    return key === null ? [] : [{ term, key, weight }];
  });
}

/**
 * The kept words' BM25 over the chunks, by chunk id (a chunk holding none has no score), and `known`, the query's
 * BM25 for a chunk of average length holding each word once (relevance.ts). `dfs`: each candidate's chunk count in
 * the tenant, in order (null: in none, so not kept). Words are ordered by weight x IDF, ties by their order; their
 * weights scaled so the strongest weighs 1.
 */
export function feedbackScores(
  tenantId: string,
  candidates: FeedbackCandidate[],
  dfs: (number | null)[],
  totals: KeywordTotals,
  chunks: Iterable<FeedbackChunk>,
): { scores: Map<number, number>; known: number } {
  const ranked = candidates
    .flatMap((c, i) => {
      const df = dfs[i];
      if (df === null || df === undefined) return [];
      const ratio = (totals.n - df + 0.5) / (df + 0.5);
      const idf = ratio > 0 ? Math.max(Math.log(ratio), 1e-6) : 1e-6;
      return [{ key: c.key, idf, strength: c.weight * idf, order: i }];
    })
    .sort((a, b) => b.strength - a.strength || a.order - b.order)
    .slice(0, FEEDBACK_TERMS);
  const scores = new Map<number, number>();
  if (ranked.length === 0) return { scores, known: 0 };
  const strongest = ranked[0]!.strength;
  const terms = ranked.map((t) => ({ key: t.key, idf: t.idf, weight: strongest > 0 ? t.strength / strongest : 0 }));
  const code = keywordCode(tenantId);
  for (const chunk of chunks) {
    if (chunk.fts_tokens === null || scores.has(chunk.chunk_id)) continue;
    const freqs =
      chunk.term_freqs ?? termFreqs(code, chunk.chunk_content, chunk.unindexed_context ?? "", CONTEXT_WEIGHT);
    let score = 0;
    let held = false;
    for (const t of terms) {
      const f = forwardFreq(freqs, t.key);
      if (f === 0) continue;
      held = true;
      score += t.weight * t.idf * saturated(f, chunk.fts_tokens, totals.avgdl);
    }
    if (held) scores.set(chunk.chunk_id, score);
  }
  return { scores, known: terms.reduce((sum, t) => sum + t.idf * t.weight, 0) };
}
