/**
 * What a search `score` means: an absolute relevance in 0..1, comparable across queries, so an agent
 * can tell "found it" (near 1) from "shares a word" (near 0) and a threshold means the same everywhere.
 *
 * - Keyword part: how much of the query's information the chunk holds, as a product of two shares.
 *   Match: the chunk's BM25 over the BM25 of a chunk of average length holding once each query term
 *   that occurs in the tenant (the sum of their IDF; capped at 1, repeating a term in a short chunk
 *   is not more than a full match). It is BM25 divided by a per-query constant, so it orders hits
 *   exactly as BM25 does. Known: the share of the query's information (sum of IDF) carried by terms
 *   that occur in the tenant at all; a term nothing holds has the largest IDF, so a query about
 *   things the project never mentions scores low even where one of its common words matches.
 *   ("zebra quantum chromodynamics" matches nothing and gets no hit.)
 * - Vector part: the cosine above what unrelated texts reach by chance with this embedder, rescaled
 *   to 0..1: max(0, (cos - chance) / (1 - chance)).
 * - Fused: 1 - (1 - keyword) x (1 - vector)^w, w = HYBRID_VECTOR_WEIGHT (0 with the local embedder,
 *   so the score is the keyword part). The parts are read as independent evidence: either one alone
 *   keeps its value (an exact match not embedded yet still scores as one; a paraphrase with no shared
 *   word scores its vector part), agreement raises the score, and 0 + 0 stays 0. A weighted mean
 *   would halve a keyword match whose vector is missing or unremarkable. `mode` keyword or vector
 *   scores one part alone.
 */

/**
 * Hits scoring below this share nothing but incidental words with the query and are not returned. The
 * floor sits under the scores that real answers reach: it cuts noise, not answers.
 */
export const MIN_RELEVANCE = 0.1;

/**
 * Cosine that unrelated texts reach by chance when EMBEDDING_CHANCE_SIMILARITY is unset. The local
 * embedder is lexical: unrelated English texts share character trigrams and hash buckets, so an off-topic
 * question still reaches some stored text at a clear cosine, and the lexical level sits above that. Semantic
 * models crowd their vectors in a cone, so unrelated sentences score well above 0; 0.5 is not measured
 * here (no model offline), so set the variable from your model's scores of unrelated pairs.
 */
export const DEFAULT_CHANCE_SIMILARITY = { semantic: 0.5, lexical: 0.4 };

/**
 * The keyword part from a chunk's BM25, the BM25 of an average chunk holding each known query term
 * once (`known`), and the share of the query's information its known terms carry (`knownShare`).
 * The share counts twice: once because a chunk can hold at most the known part of the query, and once
 * as the odds that the query is about this tenant's data at all, since a word nothing stored ever used
 * ("antibody" in "How do vaccines trigger antibody production?") says the question is about something
 * else. Squared, the share leaves far more off-topic questions (one everyday word matched) with nothing
 * than counted once, while a real question with every word known loses nothing.
 */
export function keywordPart(bm25: number, known: number, knownShare: number): number {
  return Math.min(1, keywordStrength(bm25, known, knownShare));
}

/**
 * The keyword part before its cap at 1: how far past a full match a chunk goes (a short chunk holding
 * every term twice). Scores report the capped part; among hits that score 1 this orders them.
 */
export function keywordStrength(bm25: number, known: number, knownShare: number): number {
  const share = Math.min(1, Math.max(0, knownShare));
  return known > 0 ? Math.max(0, bm25 / known) * share * share : 0;
}

/** The vector part from a cosine; 0 at or below the embedder's chance level. */
export function vectorPart(cosine: number | null, chance: number): number {
  if (cosine === null) return 0;
  return Math.min(1, Math.max(0, (cosine - chance) / (1 - chance)));
}

/** The fused score of a hybrid hit (see above); vectorWeight 0 gives the keyword part. */
export function fusedScore(keyword: number, vector: number, vectorWeight: number): number {
  return 1 - (1 - keyword) * (1 - vector) ** vectorWeight;
}

/** Independent pieces of evidence combined: 1 - (1 - a)(1 - b); 0 adds nothing, 1 is certain. */
export function eitherEvidence(a: number, b: number): number {
  return 1 - (1 - a) * (1 - b);
}

/*
 * Evidence beyond the hit's own match (search.ts, proximity.ts, expansion.ts). Each stage stays because
 * taking it away lowers recall (`npm run replay -- locomo` with WITHOUT=<stage>); links add nothing on LoCoMo, whose
 * links come from the local embedder, and a test shows what they do. The weights below were chosen on an offline
 * replica of this ranking over the same data.
 * Evidence from other hits never lifts a hit past the one that matches the query best (search.ts,
 * keepLeadFirst), so a held hit reports the lead's score. Diversifying across sessions lowers recall at
 * every strength (evidence of one question clusters in its session), and so does diversifying by shared words
 * (MMR), so neither is done. BM25's own k1 and b stay FTS5's (1.2, 0.75): chosen per fold instead, they do
 * worse on the held-out folds than the defaults.
 */

/**
 * Weight of relevance feedback: a chunk matching the words the best first hits share gets this share
 * of its feedback score, times the best first hit's score (weak first hits feed back weakly). The
 * feedback query counts as much as the query itself, as RM3's even mix of the two does; nearby weights do
 * no better on the benchmarks taken together.
 */
export const FEEDBACK_WEIGHT = 1;

/**
 * Weight of a neighbour's evidence at distance 1 in reading order (a half at distance 2): the next or
 * previous turn of a hit is often the answer ("What got you into running?" -> "My kids, they ...").
 * Weight and reach (NEIGHBOUR_REACH) were chosen on the offline replica, short of the weight where recall
 * falls.
 */
export const NEIGHBOUR_WEIGHT = 0.3;

/** Weight of a linked item's evidence, times the link's weight (at most 1). */
export const LINK_WEIGHT = 0.3;

/**
 * A message whose speaker the query names ("What does Melanie ...") gains this share: the evidence for a
 * question naming one participant is mostly that participant's own turn. Not more: a larger share costs
 * questions about what one person said of the other.
 */
export const SPEAKER_WEIGHT = 0.2;

/**
 * A first hit holding all of the query's adjacent word pairs side by side, in order, gains this share of its keyword
 * part (a share of the pairs, that share of it), before fusion: proximity.ts. A larger weight scores higher on the
 * MS MARCO sample only through a few queries moving either way, so it is not taken; a window of two words, or pairs
 * in either order, do less.
 */
export const PROXIMITY_WEIGHT = 0.5;

/** A question asking when gains this share on text that states a time. */
export const STATES_TIME_WEIGHT = 0.3;
