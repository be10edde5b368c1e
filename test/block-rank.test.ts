import { describe, expect, it } from "vitest";
import { exactScores, rankBlocks } from "../src/core/keyword-index/block-rank";
import type { BlocksRead, BlockTerm, WordRead } from "../src/core/keyword-index/block-read";
import type { BlockEntry } from "../src/core/keyword-index/blocks";
import { saturated } from "../src/core/keyword-index/bm25";

/**
 * The worker's side of posting blocks (src/core/keyword-index/block-rank.ts): BM25 from the postings read, and the
 * certificate that the pool is the index's, over made-up posting lists checked against BM25 over every posting.
 */

const AVGDL = 12;

/** A word's whole posting list. */
type List = { term: string; postings: BlockEntry[] };

/** What a first trip reads of the lists: blocks of `size` entries by impact, the first `blocks` of each. */
function readOf(lists: List[], n: number, blocks: number, size: number, changed: number[] = []): BlocksRead {
  const words = new Map<string, WordRead>();
  for (const list of lists) {
    const sorted = [...list.postings].sort(
      (a, b) => saturated(b[1], b[2]!, AVGDL) - saturated(a[1], a[2]!, AVGDL) || a[0] - b[0],
    );
    const read: WordRead = {
      df: sorted.length || null,
      postings: new Map(),
      next: null,
      bound: 0,
      avgdl: AVGDL,
      built: 1,
    };
    sorted.forEach(([doc, f, len, project], i) => {
      if (i < blocks * size) read.postings.set(doc, { f, len, project });
      else if (read.next === null) [read.next, read.bound] = [blocks, saturated(f, len!, AVGDL)];
    });
    for (const doc of changed) read.postings.delete(doc);
    words.set(list.term, read);
  }
  return { words, n, avgdl: AVGDL, changed: new Set(changed), unserved: false };
}

function terms(lists: List[]): BlockTerm[] {
  return lists.map((l, phrase) => ({ phrase, term: l.term, match: `"${l.term}"`, key: l.term }));
}

/** BM25 over every posting, best first (ties by chunk id), as the statement over every posting ranks. */
function brute(lists: List[], n: number, projects: string[] | null = null): [number, number][] {
  const scores = new Map<number, number>();
  for (const { postings } of lists) {
    const df = postings.length;
    if (df === 0) continue;
    const ratio = (n - df + 0.5) / (df + 0.5);
    const w = ratio > 0 ? Math.max(Math.log(ratio), 1e-6) : 1e-6;
    for (const [doc, f, len, project] of postings) {
      if (projects && project !== null && !projects.includes(project)) continue;
      scores.set(doc, (scores.get(doc) ?? 0) + w * saturated(f, len!, AVGDL));
    }
  }
  return [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
}

/** A list: chunks 1..n of which `holds(doc)` hold the word, with frequency and length from the chunk id. */
function list(term: string, chunks: number, holds: (doc: number) => boolean, project = (_: number) => "p"): List {
  const postings: BlockEntry[] = [];
  for (let doc = 1; doc <= chunks; doc++)
    if (holds(doc)) postings.push([doc, 1 + (doc % 3) * 0.5, 5 + ((doc * 7) % 20), project(doc)]);
  return { term, postings };
}

/** The plan's pool: an exact plan's order, a bounded plan's chunks scored from "rows" holding every word. */
function pool(plan: ReturnType<typeof rankBlocks>, lists: List[], size: number): [number, number][] | null {
  if (plan.kind === "exact") return plan.order.slice(0, size).map((doc) => [doc, plan.scores.get(doc)!]);
  if (plan.kind === "more") return null;
  const rows = plan.order.map((doc) => {
    const freqs = lists.flatMap((l) => l.postings.filter((p) => p[0] === doc).map((p) => `${l.term}:${p[1]}`));
    const len = lists.flatMap((l) => l.postings.filter((p) => p[0] === doc).map((p) => p[2]))[0] ?? null;
    return { chunk_id: doc, term_freqs: ` ${freqs.join(" ")} `, fts_tokens: len };
  });
  const exact = exactScores(plan, rows, AVGDL, size);
  return exact && [...exact].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, size);
}

function expectPool(actual: [number, number][] | null, expected: [number, number][]) {
  expect(actual).not.toBeNull();
  expect(actual!.map(([doc]) => doc)).toEqual(expected.map(([doc]) => doc));
  actual!.forEach(([, score], i) => expect(score).toBeCloseTo(expected[i]![1], 12));
}

describe("ranking from posting blocks", () => {
  const N = 3000;
  const common = list("commn", N, () => true);
  const half = list("halff", N, (d) => d % 2 === 0);
  const rare = list("raree", N, (d) => d % 97 === 0);
  const one = list("onlyy", N, (d) => d === 1234);

  it("scores as BM25 over every posting where every block was read: a word in one chunk, a word in every chunk", () => {
    for (const lists of [[one], [common], [one, common], [rare, half, common]]) {
      const plan = rankBlocks(readOf(lists, N, 100, 100), terms(lists), null, 80);
      expect(plan.kind).toBe("exact");
      expectPool(pool(plan, lists, 80), brute(lists, N).slice(0, 80));
    }
  });

  it("orders ties by chunk id", () => {
    const same = list("samee", 300, () => true);
    for (const p of same.postings) [p[1], p[2]] = [1, 10];
    const plan = rankBlocks(readOf([same], 300, 100, 100), terms([same]), null, 50);
    expect(plan.kind === "exact" && plan.order.slice(0, 5)).toEqual([1, 2, 3, 4, 5]);
  });

  it("asks for the rest of a word's blocks where its bound could place an unread chunk in the pool", () => {
    // One block of 100 of a word in every chunk: the 101st chunk's part could be the pool's 80th.
    const lists = [common];
    const first = rankBlocks(readOf(lists, N, 1, 50), terms(lists), null, 80);
    expect(first).toEqual({ kind: "more", words: [{ term: "commn", from: 1 }] });
    // Read in full, the same pool as every posting.
    expectPool(
      pool(rankBlocks(readOf(lists, N, 100, 50), terms(lists), null, 80), lists, 80),
      brute(lists, N).slice(0, 80),
    );
  });

  it("certifies the pool from the first blocks where the bound leaves no unread chunk able to reach it", () => {
    // A rare word decides the pool; the common word read in part adds at most its bound to the chunks it may hold.
    const lists = [rare, common];
    const plan = rankBlocks(readOf(lists, N, 1, 200), terms(lists), null, 20);
    expect(plan.kind).toBe("bounded");
    expectPool(pool(plan, lists, 20), brute(lists, N).slice(0, 20));
  });

  it("does not certify a pool the filters thinned: the caller reads every posting instead", () => {
    const lists = [rare, common];
    const plan = rankBlocks(readOf(lists, N, 1, 200), terms(lists), null, 20);
    if (plan.kind !== "bounded") throw new Error("expected a bounded plan");
    // Only half the chunks that may reach the pool pass the filters.
    const rows = plan.order
      .filter((_, i) => i % 2 === 0)
      .map((doc) => ({ chunk_id: doc, term_freqs: " raree commn ", fts_tokens: 10 }));
    expect(exactScores(plan, rows, AVGDL, 20)).toBeNull();
  });

  it("leaves out other projects' chunks before ranking, as the statement over every posting does", () => {
    const byProject = (term: string, holds: (d: number) => boolean) =>
      list(term, N, holds, (d) => (d % 3 === 0 ? "a" : "b"));
    const lists = [byProject("xxxxa", (d) => d % 5 === 0), byProject("xxxxb", () => true)];
    const plan = rankBlocks(readOf(lists, N, 100, 100), terms(lists), ["a"], 40);
    expectPool(pool(plan, lists, 40), brute(lists, N, ["a"]).slice(0, 40));
  });

  it("leaves out the entries of chunks changed since their blocks, which the read scores from their rows", () => {
    const lists = [rare, half];
    const gone = brute(lists, N)
      .slice(0, 3)
      .map(([doc]) => doc);
    // Deleted since the blocks were built: their entries are still there, the index's counts no longer hold them.
    const read = readOf(lists, N, 100, 100, gone);
    const remaining = lists.map((l) => ({ term: l.term, postings: l.postings.filter((p) => !gone.includes(p[0])) }));
    for (const l of remaining) read.words.get(l.term)!.df = l.postings.length;
    const plan = rankBlocks(read, terms(lists), null, 30);
    expectPool(pool(plan, remaining, 30), brute(remaining, N).slice(0, 30));
  });
});
