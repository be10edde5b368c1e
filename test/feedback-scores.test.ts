import { describe, expect, it } from "vitest";
import { saturated } from "../src/core/keyword-index/bm25";
import {
  FEEDBACK_TERMS,
  type FeedbackChunk,
  feedbackCandidates,
  feedbackScores,
} from "../src/core/search/feedback-scores";

/** Relevance feedback's word choice and scores in the worker (src/core/search/feedback-scores.ts). */

const TENANT = "tenant-feedback";
const TOTALS = { n: 1_000, avgdl: 10 };
const idf = (df: number) => Math.log((TOTALS.n - df + 0.5) / (df + 0.5));
const chunk = (id: number, freqs: string, len = 10): FeedbackChunk => ({
  chunk_id: id,
  chunk_content: "",
  fts_tokens: len,
  term_freqs: freqs,
  unindexed_context: null,
});

describe("relevance feedback's scores", () => {
  // Twelve words of equal weight in the best hits: w0 in 1 chunk, w1 in 2, ... w11 in 12; w12 in none.
  const words = Array.from({ length: 13 }, (_, i) => ({ token: `w${i}`, weight: 1 }));
  const candidates = feedbackCandidates(TENANT, words);
  const dfs = words.map((_, i) => (i < 12 ? i + 1 : null));

  it("keeps the FEEDBACK_TERMS strongest words by weight x IDF, the strongest weighing 1", () => {
    const chunks = words.map((_, i) => chunk(i, ` ${candidates[i]!.key} `));
    const { scores, known } = feedbackScores(TENANT, candidates, dfs, TOTALS, chunks);
    // The ten rarest are kept; the two commonest, and the word in no chunk, are not.
    expect([...scores.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: FEEDBACK_TERMS }, (_, i) => i));
    expect(scores.get(0)).toBeCloseTo(idf(1) * saturated(1, 10, 10), 12);
    expect(scores.get(9)).toBeCloseTo((idf(10) / idf(1)) * idf(10) * saturated(1, 10, 10), 12);
    const kept = Array.from({ length: FEEDBACK_TERMS }, (_, i) => idf(i + 1));
    expect(known).toBeCloseTo(
      kept.reduce((sum, w) => sum + (w * w) / kept[0]!, 0),
      12,
    );
  });

  it("sums a chunk's words with their frequencies and its length, and weighs words by their share of the best hits", () => {
    const two = feedbackCandidates(TENANT, [
      { token: "harbour", weight: 0.5 },
      { token: "quillwort", weight: 1 },
    ]);
    const { scores } = feedbackScores(TENANT, two, [10, 10], TOTALS, [
      chunk(1, ` ${two[0]!.key}:2.5 ${two[1]!.key} `, 20),
      chunk(2, " other "),
    ]);
    expect(scores.get(1)).toBeCloseTo(0.5 * idf(10) * saturated(2.5, 20, 10) + idf(10) * saturated(1, 20, 10), 12);
    expect(scores.has(2)).toBe(false);
  });

  it("builds a chunk's forward index from its text where it has none, and leaves a chunk indexed before tenant terms out", () => {
    const one = feedbackCandidates(TENANT, [{ token: "lamp", weight: 1 }]);
    const unindexed: FeedbackChunk = {
      chunk_id: 1,
      chunk_content: "The lamp, the lamp.",
      fts_tokens: 4,
      term_freqs: null,
      unindexed_context: "user\nA lamp?",
    };
    const legacy = { ...chunk(2, ` ${one[0]!.key} `), fts_tokens: null };
    const { scores } = feedbackScores(TENANT, one, [5], TOTALS, [unindexed, legacy]);
    // Twice in the content, once in the context (weighted 0.5).
    expect(scores.get(1)).toBeCloseTo(idf(5) * saturated(2.5, 4, 10), 12);
    expect(scores.has(2)).toBe(false);
  });

  it("leaves out a word whose stem is a stopword's (the forward index does not hold it)", () => {
    expect(
      feedbackCandidates(TENANT, [
        { token: "doing", weight: 1 },
        { token: "lamp", weight: 1 },
      ]).map((c) => c.key),
    ).toEqual(["lamp"]);
  });
});
