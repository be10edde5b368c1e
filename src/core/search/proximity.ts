import { indexTokens, keywordCode, storedTerm } from "../../shared/fts-text";
import { forwardFreq, forwardKey } from "../keyword-index/term-freqs";

/**
 * Proximity (search's `proximity` stage): a hit that holds two of the query's words side by side, in the query's
 * order, matches it more closely than one holding them apart ("pottery class" against "class ... pottery"). This is
 * the ordered-bigram feature of Metzler and Croft's sequential dependence model, read in the worker from the first
 * hits' own text. Function words are skipped on both sides, so "bought the figurines" holds "buy figurines".
 */

/** A query's ordered pairs of adjacent words, as the tenant's forward index keys them. */
export interface QueryPairs {
  pairs: [string, string][];
  /** The distinct words of the pairs. */
  words: string[];
  keyOf: (token: string) => string | null;
}

/**
 * A token's forward index key in the tenant's term space (term-freqs.ts: its stem, irregular forms as their base form),
 * or null for a function word. The code counts: with it before them the stemmer takes "used" to "use", without it to
 * "us" (a few words of real text differ so). Words repeat across hits and searches, so keys are kept for the isolate:
 * stemming every word of every first hit anew would be a visible share of a search's worker time.
 */
function keysOf(code: string): (token: string) => string | null {
  let keys = keysByCode.get(code);
  if (!keys) {
    if (keysByCode.size >= MAX_TENANTS) keysByCode.clear();
    keysByCode.set(code, (keys = new Map()));
  }
  const cache = keys;
  return (token) => {
    let key = cache.get(token);
    if (key === undefined) {
      if (cache.size >= MAX_KEYS) cache.clear();
      cache.set(token, (key = forwardKey(code, storedTerm(code, token))));
    }
    return key;
  };
}
const keysByCode = new Map<string, Map<string, string | null>>();
const MAX_TENANTS = 100;
const MAX_KEYS = 20_000;

/**
 * The query's ordered pairs of adjacent words (as forward index keys: term-freqs.ts, so stemmed, irregular forms as
 * their base form, function words left out), or null when it has fewer than two such words.
 */
export function queryPairs(tenantId: string, query: string): QueryPairs | null {
  const keyOf = keysOf(keywordCode(tenantId));
  const words = indexTokens(query.toLowerCase()).flatMap((token) => keyOf(token) ?? []);
  const seen = new Set<string>();
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < words.length; i++) {
    const [a, b] = [words[i]!, words[i + 1]!];
    if (a === b || seen.has(`${a} ${b}`)) continue;
    seen.add(`${a} ${b}`);
    pairs.push([a, b]);
  }
  return pairs.length > 0 ? { pairs, words: [...new Set(pairs.flat())], keyOf } : null;
}

/**
 * The share of the query's pairs that the chunk's content holds side by side, in order (0..1). The chunk's forward
 * index (null for a chunk indexed before it existed) says first whether its content may hold both words of a pair: a
 * word of the content counts 1 there, one of the context only CONTEXT_WEIGHT (a message's context holds the turns
 * around it), so most hits are not read word by word.
 */
export function pairShare(query: QueryPairs, content: string, termFreqs: string | null): number {
  const inContent = new Set(
    termFreqs === null ? query.words : query.words.filter((key) => forwardFreq(termFreqs, key) >= 1),
  );
  const candidates = query.pairs.filter(([a, b]) => inContent.has(a) && inContent.has(b));
  if (candidates.length === 0) return 0;
  // The second words wanted after each first word: a pair found is taken out, so it counts once.
  const wanted = new Map<string, Set<string>>();
  for (const [a, b] of candidates) wanted.set(a, (wanted.get(a) ?? new Set()).add(b));
  let held = 0;
  let after: Set<string> | undefined;
  for (const token of indexTokens(content.toLowerCase())) {
    const key = query.keyOf(token);
    if (key === null) continue;
    if (after?.delete(key)) held++;
    after = wanted.get(key);
  }
  return held / query.pairs.length;
}
