import { STOPWORDS } from "./stopwords";
import type { TokenCounter } from "./tokens";

export interface FittedText {
  content: string;
  tokens: number;
}

/** Sentences (and lines) in text order. */
export function sentences(text: string): string[] {
  return text
    .split(/\n\s*\n|(?<=[.!?。！？])\s+|\n/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Content words of a text, for scoring sentences against a query. */
export function contentWords(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length > 1 && !STOPWORDS.has(w)));
}

/**
 * Extractive summary that fits `maxTokens` exactly: sentences are scored by overlap with the query
 * (and, without one, with the text's own frequent words), with a bonus for the opening sentence;
 * the best that fit are kept in their original order. A text with no sentence short enough is cut
 * at a token boundary. Returns null when not even that fits (maxTokens < 1).
 */
export function summarizeToFit(
  text: string,
  query: string,
  maxTokens: number,
  counter: TokenCounter,
): FittedText | null {
  if (maxTokens < 1) return null;
  const parts = sentences(text);
  const queryWords = contentWords(query);
  const frequency = new Map<string, number>();
  for (const part of parts) for (const w of contentWords(part)) frequency.set(w, (frequency.get(w) ?? 0) + 1);
  const scored = parts.map((sentence, index) => {
    const words = contentWords(sentence);
    let score = index === 0 ? 0.5 : 0;
    for (const w of words) score += queryWords.has(w) ? 2 : Math.min(1, ((frequency.get(w) ?? 1) - 1) * 0.2);
    return {
      sentence,
      index,
      tokens: counter.count(sentence),
      score: score / Math.sqrt(Math.max(1, words.size)) + (words.size > 0 ? 0.01 : 0),
    };
  });
  return fitSentences(scored, maxTokens, counter) ?? truncateToTokens(text, maxTokens, counter);
}

export interface ScoredSentence {
  sentence: string;
  /** Position in the text; chosen sentences are joined in this order. */
  index: number;
  tokens: number;
  score: number;
}

/** The best-scored sentences that fit maxTokens, joined in text order; checked with an exact count. */
export function fitSentences(scored: ScoredSentence[], maxTokens: number, counter: TokenCounter): FittedText | null {
  const chosen: ScoredSentence[] = [];
  let used = 0;
  for (const candidate of [...scored].sort((a, b) => b.score - a.score || a.index - b.index)) {
    if (used + candidate.tokens + (chosen.length > 0 ? 1 : 0) > maxTokens) continue;
    chosen.push(candidate);
    used += candidate.tokens + (chosen.length > 1 ? 1 : 0);
  }
  // Exact count of the joined text; drop the weakest sentence while it is over.
  while (chosen.length > 0) {
    const content = [...chosen]
      .sort((a, b) => a.index - b.index)
      .map((c) => c.sentence)
      .join(" ");
    const tokens = counter.count(content);
    if (tokens <= maxTokens) return { content, tokens };
    chosen.sort((a, b) => b.score - a.score).pop();
  }
  return null;
}

/** The longest token prefix of `text` whose own count is within maxTokens. */
export function truncateToTokens(text: string, maxTokens: number, counter: TokenCounter): FittedText | null {
  const tokens = counter.encode(text);
  for (let n = Math.min(maxTokens, tokens.length); n > 0; n--) {
    const content = counter.decode(tokens.slice(0, n)).replace(/\uFFFD+$/u, ""); // no half characters
    const count = counter.count(content);
    if (content.trim().length > 0 && count <= maxTokens) return { content, tokens: count };
  }
  return null;
}
