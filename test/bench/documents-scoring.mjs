// Scoring search hits at the passage level for the documents suite (documents.mjs). A hit of a stored passage is that
// passage. A hit of a document chunk is mapped to the passage(s) of its document in one of two ways:
// - by section: a chunk never spans two sections, and a section's heading "Passage k" names the document's k-th
//   passage; a chunk whose section names no passage (the converter missed the heading) falls back to overlap;
// - by overlap: the passages of which the chunk holds at least half of the word pairs (a passage cut between two
//   chunks counts in each that holds half of it), in document order; when none reaches half, the one it shares the
//   most pairs with. Words are compared after NFKC (a PDF's ligatures), lower case, letters and digits only.
// Pure: the node test runs it on made-up hits.
import { headingNumber } from "./documents-corpus.mjs";
import { fmt, mean, ndcgAt, recallAt, uniqueInOrder } from "./metrics.mjs";

/** Half of a passage's word pairs in a chunk: the chunk holds that passage. */
export const HOLDS_SHARE = 0.5;

/** A text's words as compared: NFKC, lower case, runs of letters and digits. */
export function words(text) {
  return (
    text
      .normalize("NFKC")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** A text's adjacent word pairs (a one-word text: its word). */
export function wordPairs(text) {
  const w = words(text);
  if (w.length < 2) return new Set(w);
  const pairs = new Set();
  for (let i = 1; i < w.length; i++) pairs.add(`${w[i - 1]} ${w[i]}`);
  return pairs;
}

/** The share of `pairs` (a passage's) that `chunkPairs` holds. */
function sharedShare(pairs, chunkPairs) {
  if (pairs.size === 0) return 0;
  let shared = 0;
  for (const pair of pairs) if (chunkPairs.has(pair)) shared++;
  return shared / pairs.size;
}

/** Indexes (0-based, in document order) of the passages a chunk holds by the overlap rule; `pairs`: each passage's. */
export function passagesByOverlap(chunkText, pairs) {
  const chunkPairs = wordPairs(chunkText);
  const shares = pairs.map((p) => sharedShare(p, chunkPairs));
  const held = shares.flatMap((share, i) => (share >= HOLDS_SHARE ? [i] : []));
  if (held.length > 0) return held;
  const best = shares.reduce((b, share, i) => (share > shares[b] ? i : b), 0);
  return shares[best] > 0 ? [best] : [];
}

/** The index (0-based) of the passage a section path names ("Document 3 > Passage 7" -> 6), or null. */
export function passageBySection(section, passageCount) {
  const k = headingNumber(section.split(" > ").at(-1) ?? "");
  return k !== null && k >= 1 && k <= passageCount ? k - 1 : null;
}

/**
 * A function mapping one search's results to passage ids in rank order, with counts of how each hit was mapped.
 * `documents`: document_id -> {passages: [{_id, text}]}. `rule`: "section" (then overlap) or "overlap".
 */
export function passageRanker(documents, rule) {
  const pairsOf = new Map([...documents].map(([id, d]) => [id, d.passages.map((p) => wordPairs(p.text))]));
  const counts = { hits: 0, bySection: 0, byOverlap: 0, unmapped: 0, agree: 0 };
  const rank = (results) => {
    const ids = [];
    for (const hit of results) {
      const document = hit.document && documents.get(hit.document.document_id);
      counts.hits++;
      if (!document) {
        counts.unmapped++;
        continue;
      }
      const pairs = pairsOf.get(hit.document.document_id);
      const overlap = passagesByOverlap(hit.content, pairs);
      const named = rule === "section" ? passageBySection(hit.document.section, pairs.length) : null;
      if (named !== null) {
        counts.bySection++;
        if (overlap.includes(named)) counts.agree++;
        ids.push(document.passages[named]._id);
      } else if (overlap.length > 0) {
        counts.byOverlap++;
        ids.push(...overlap.map((i) => document.passages[i]._id));
      } else counts.unmapped++;
    }
    return uniqueInOrder(ids);
  };
  return { rank, counts };
}

/** nDCG@10 and R@10 (relevant: grade > 0) of ranked passage ids per query id, as msmarco.mjs scores them. */
export function scoreRankings(rankings, qrels) {
  const ndcg = [];
  const recall = [];
  for (const [queryId, ranked] of rankings) {
    const grades = qrels.get(queryId);
    ndcg.push(ndcgAt(ranked, grades, 10));
    recall.push(recallAt(ranked, new Set([...grades].filter(([, g]) => g > 0).map(([id]) => id)), 10));
  }
  return { ndcg: mean(ndcg), recall: mean(recall) };
}

/** Issue 62's target: (b) within 0.05 nDCG@10 of (a), and (b) >= (c); met or not met, with the figures. */
export function targetLine(a, b, c) {
  const close = b.ndcg >= a.ndcg - 0.05;
  const notWorse = b.ndcg >= c.ndcg;
  return (
    `  target: (b) within 0.05 nDCG@10 of (a), and (b) >= (c): ${close && notWorse ? "met" : "not met"} ` +
    `((b) - (a) = ${signed(b.ndcg - a.ndcg)}, ${close ? "within" : "not within"} 0.05; ` +
    `(b) - (c) = ${signed(b.ndcg - c.ndcg)})`
  );
}

/** A difference with its sign; one that rounds to zero reads +0.000. */
const signed = (n) => (Math.round(n * 1000) === 0 ? "+0.000" : `${n > 0 ? "+" : ""}${fmt(n, 3)}`);
