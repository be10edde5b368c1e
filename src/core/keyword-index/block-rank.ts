import type { BlocksRead, BlockTerm, WordRead } from "./block-read";
import { saturated } from "./bm25";
import { forwardFreq } from "./term-freqs";

/**
 * BM25 over the postings a read of blocks found (block-read.ts), in the worker, as keyword-index/scores.ts computes
 * it in SQL (FTS5's formula: IDF floored at 1e-6, the tenant's totals, a chunk's frequency and length), and the
 * certificate that the top hits are the index's: a chunk's part for a word whose blocks were all read is known (0
 * where it is not among them), and for a word read only in part it is at most the word's weight times the bound of
 * its unread blocks (MaxScore). Where the bounds leave a chunk outside the chunks found able to enter the `pool`
 * best, the rest of the blocks are read; chunks whose part is not known are scored from their forward index, read
 * with their rows (`exactScores`).
 */

/** The query's known information, as keyword_query_info gives it (relevance.ts). */
export interface QueryInfo {
  known: number;
  known_share: number;
}

/** A phrase's weight and the read of its word. */
interface Weighted {
  term: BlockTerm;
  read: WordRead;
  w: number;
  /** What the word's unread blocks may add to a chunk's score (0 when every block was read). */
  unread: number;
}

export type BlockPlan =
  /** Every word read in full: the chunks found, best first, with their exact scores. */
  | { kind: "exact"; order: number[]; scores: Map<number, number>; info: QueryInfo }
  /**
   * Some word read in part, but no chunk outside `order` can reach the pool: the chunks that may, by their bound
   * (best first), their scores as far as known, and what the unknown parts need; the pool's certificate is `floor`.
   */
  | {
      kind: "bounded";
      order: number[];
      scores: Map<number, number>;
      unknown: Map<number, Weighted[]>;
      floor: number;
      info: QueryInfo;
    }
  /** The bounds require the words' remaining blocks. */
  | { kind: "more"; words: { term: string; from: number }[] };

/** IDF as FTS5 floors it (scores.ts, keyword_idf). */
function idf(n: number, df: number): number {
  const ratio = (n - df + 0.5) / (df + 0.5);
  return ratio > 0 ? Math.max(Math.log(ratio), 1e-6) : 1e-6;
}

/** The query's known information from its phrases' chunk counts (scores.ts, keyword_query_info). */
function queryInfo(n: number, dfs: (number | null)[]): QueryInfo {
  let known = 0;
  let held = 0;
  let all = 0;
  for (const df of dfs) {
    if (df !== null) {
      known += idf(n, df);
      held += Math.log(1 + (Math.max(n - df, 0) + 0.5) / (df + 0.5));
    }
    const d = df ?? 0;
    all += Math.log(1 + (Math.max(n - d, 0) + 0.5) / (d + 0.5));
  }
  return { known, known_share: held / all };
}

/**
 * The plan for the keyword list of `pool` chunks from a read of blocks: the chunks of `projects` (null: every
 * project) best first, with what certifies them.
 */
export function rankBlocks(
  read: BlocksRead,
  terms: BlockTerm[],
  projects: readonly string[] | null,
  pool: number,
): BlockPlan {
  const inProjects = projects ? new Set(projects) : null;
  const dfs = terms.map((t) => read.words.get(t.term)!.df);
  const info = queryInfo(read.n, dfs);
  const weighted: Weighted[] = [];
  terms.forEach((term, p) => {
    const df = dfs[p];
    if (df === null || df === undefined) return;
    const r = read.words.get(term.term)!;
    const w = idf(read.n, df);
    const unread = r.next === null ? 0 : w * r.bound * Math.max(1, read.avgdl / r.avgdl);
    weighted.push({ term, read: r, w, unread });
  });
  const scores = new Map<number, number>();
  for (const { read: r, w } of weighted)
    for (const [doc, posting] of r.postings) {
      if (inProjects && posting.project !== null && !inProjects.has(posting.project)) continue;
      scores.set(doc, (scores.get(doc) ?? 0) + w * saturated(posting.f, posting.len ?? read.avgdl, read.avgdl));
    }
  const best = (a: [number, number], b: [number, number]) => b[1] - a[1] || a[0] - b[0];
  const partial = weighted.filter((x) => x.unread > 0);
  if (partial.length === 0) {
    const order = [...scores].sort(best).map(([doc]) => doc);
    return { kind: "exact", order, scores, info };
  }
  // A chunk found nowhere may score up to `unseen`; one found may gain the unread part of each word it is not seen in.
  const unseen = partial.reduce((sum, x) => sum + x.unread, 0);
  const lower = [...scores].sort(best);
  const floor = lower.length >= pool ? lower[pool - 1]![1] : 0;
  if (unseen >= floor || floor === 0)
    return { kind: "more", words: partial.map((x) => ({ term: x.term.term, from: x.read.next! })) };
  const unknown = new Map<number, Weighted[]>();
  const upper: [number, number][] = [];
  for (const [doc, score] of lower) {
    const missing = read.changed.has(doc) ? [] : partial.filter((x) => !x.read.postings.has(doc));
    const bound = score + missing.reduce((sum, x) => sum + x.unread, 0);
    if (bound < floor) continue;
    if (missing.length > 0) unknown.set(doc, missing);
    upper.push([doc, bound]);
  }
  return { kind: "bounded", order: upper.sort(best).map(([doc]) => doc), scores, unknown, floor, info };
}

/**
 * A bounded plan's chunks scored exactly from their rows (forward index and length, as the walk read them), the
 * passing ones best first; null where they do not certify the pool (filters took too many of them), and the caller
 * reads the list in full.
 */
export function exactScores(
  plan: Extract<BlockPlan, { kind: "bounded" }>,
  rows: { chunk_id: number; term_freqs: string | null; fts_tokens: number | null }[],
  avgdl: number,
  pool: number,
): Map<number, number> | null {
  const exact = new Map<number, number>();
  for (const row of rows) {
    let score = plan.scores.get(row.chunk_id) ?? 0;
    for (const x of plan.unknown.get(row.chunk_id) ?? []) {
      if (row.term_freqs === null) return null;
      const f = forwardFreq(row.term_freqs, x.term.key);
      if (f > 0) score += x.w * saturated(f, row.fts_tokens ?? avgdl, avgdl);
    }
    exact.set(row.chunk_id, score);
  }
  const sorted = [...exact.values()].sort((a, b) => b - a);
  return sorted.length >= pool && sorted[pool - 1]! >= plan.floor ? exact : null;
}
