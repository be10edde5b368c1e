import { describe, expect, it } from "vitest";
import { InvertedLists, insertTopK, type ScoredId } from "../../src/adapters/inverted-lists";
import { LocalEmbedder, tokenize } from "../../src/adapters/local-embedder";
import { dot, fromHex, toHex } from "../../src/shared/vector-math";
import { generatedConversations, generatedPassages } from "../fixtures/generated-text";
import { indexedTurns, neighbourRecall as measure } from "../fixtures/neighbour-recall";

// The local index's auto-link path probes inverted lists instead of scanning every vector: on text-like
// corpora (generated passages, and conversation turns as log_chat indexes them; the local embedder) it must
// find nearly all of the exact neighbours above auto-link's thresholds while comparing a fraction of the
// vectors. `npm run bench -- real-text` measures the same on MS MARCO passages and LoCoMo turns, where
// the lists do better still (99.5% at >= 0.5 comparing under a fifth of the vectors; 94% of turns at >= 0.6).

const embedder = new LocalEmbedder(256);

describe("inverted lists over 5,000 generated passage vectors", async () => {
  const vectors = new Map((await embedder.embed(generatedPassages(5000))).map((v, i) => [i + 1, v]));
  const lists = InvertedLists.clustered(256, [...vectors]);

  // Auto-link keeps neighbours at ≥ 0.6 (conversations) or ≥ 0.8 (documents) similarity. Passages that mix
  // topics sit between lists, so at ≥ 0.5 these lists find fewer than on real text (95.1% comparing 28.6% of
  // the vectors, where MS MARCO gives 99.5% under a fifth); the near copies at ≥ 0.8 are all found.
  it("finds all but a few of the exact neighbours at ≥ 0.5 with a sixth of the lists, comparing under 30% of the vectors", () => {
    const { recall, pairs, scannedShare } = measure(vectors, lists, lists.probesFor(), [0.5, 0.8], 25);
    expect(pairs[1]).toBeGreaterThan(50); // the corpus holds near copies to find
    expect(recall[0]).toBeGreaterThanOrEqual(0.94);
    expect(recall[1]).toBeGreaterThanOrEqual(0.99);
    expect(scannedShare).toBeLessThan(0.3);
  });

  it("finds the neighbours at ≥ 0.8 (documents' threshold) with fewer lists, comparing a fifth of the vectors", () => {
    expect(lists.probesFor(0.8)).toBeLessThan(lists.probesFor(0.6));
    const { recall, scannedShare } = measure(vectors, lists, lists.probesFor(0.8), [0.8], 25);
    expect(recall[0]).toBeGreaterThanOrEqual(0.99);
    expect(scannedShare).toBeLessThan(0.22);
  });

  it("keeps the neighbours of vectors added after the lists were built (double the size, as before a rebuild)", () => {
    const grown = InvertedLists.clustered(256, [...vectors].slice(0, 2500));
    for (const [id, v] of [...vectors].slice(2500)) grown.add(id, v);
    const { recall } = measure(vectors, grown, grown.probesFor(0.8), [0.8], 25);
    expect(recall[0]).toBeGreaterThanOrEqual(0.97);
  });

  it("places added, rewritten and deleted vectors where queries find them", () => {
    const copy = lists.rebuilt();
    const fresh = embedder.embedOne("zebra quantum chromodynamics lecture notes");
    copy.add(99_999, fresh);
    expect(copy.query(fresh, 1, { probes: copy.probesFor() })[0]).toMatchObject({ chunkId: 99_999 });
    copy.add(99_999, vectors.get(7)!); // rewritten: moves to its new list, found by the new vector
    expect(
      copy
        .query(vectors.get(7)!, 2, { probes: copy.probesFor() })
        .map((m) => m.chunkId)
        .sort((a, b) => a - b),
    ).toEqual([7, 99_999]);
    expect(copy.size).toBe(vectors.size + 1);
    expect(copy.delete(7)).toBe(true);
    expect(copy.query(vectors.get(7)!, 1)[0]).toMatchObject({ chunkId: 99_999 });
    expect(copy.has(7)).toBe(false);
    expect(copy.vector(99_999)).toEqual(vectors.get(7));
    // The list that lost vector 7 moved its last vector into the slot: every other vector is still where the index says.
    for (const id of [1, 2, 3, 500, 4999]) expect(copy.vector(id)).toEqual(vectors.get(id));
    expect(copy.size).toBe(vectors.size);
  });

  // queryMany scans four queries against two vectors at a time (block-dots.ts); a query must get the same
  // answer whatever it shares a block with. 201 queries: lists probed by blocks of four and by a few left over.
  it("answers several queries as it answers each alone, block by block", () => {
    const queries = [...vectors.keys()].filter((id) => id % 25 === 1 || id === 2).map((id) => vectors.get(id)!);
    expect(queries.length % 4).not.toBe(0);
    for (const options of [
      { probes: lists.probesFor(0.8), minScore: 0.8 },
      { probes: lists.probesFor() },
      { minScore: 0.8 },
      {},
    ]) {
      const many = lists.queryMany(queries, 21, options);
      expect(many).toEqual(queries.map((q) => lists.query(q, 21, options)));
      expect(many.flat().length).toBeGreaterThan(queries.length); // not only the queries themselves
    }
  });

  it("places vectors added together as it places them one by one", () => {
    const added = [...vectors].slice(2500, 2613); // 113: blocks of four and one left over
    const one = InvertedLists.clustered(256, [...vectors].slice(0, 2500));
    const many = InvertedLists.clustered(256, [...vectors].slice(0, 2500));
    for (const [id, v] of added) one.add(id, v);
    many.addMany(added);
    expect([...many.entries()].map(([id]) => id)).toEqual([...one.entries()].map(([id]) => id));
  });

  it("answers exactly when every list is scanned, minScore included", () => {
    const query = vectors.get(42)!;
    const truth: ScoredId[] = [];
    for (const [chunkId, v] of vectors) insertTopK(truth, { chunkId, score: dot(query, v) }, 10);
    const same = (got: ScoredId[], want: ScoredId[]) => {
      expect(got.map((m) => m.chunkId)).toEqual(want.map((m) => m.chunkId));
      got.forEach((m, i) => expect(m.score).toBeCloseTo(want[i]!.score, 9));
    };
    same(lists.query(query, 10), truth);
    expect(lists.lastScanned).toBe(vectors.size);
    same(
      lists.query(query, 10, { minScore: 0.39 }),
      truth.filter((m) => m.score >= 0.39),
    );
  });
});

describe("inverted lists over generated conversation turns", async () => {
  const turns = indexedTurns(generatedConversations(10));
  const vectors = new Map((await embedder.embed(turns)).map((v, i) => [i + 1, v]));
  const lists = InvertedLists.clustered(256, [...vectors]);

  // Conversations link at ≥ 0.6. Turns are short and share their speakers and previous turns: here a sixth
  // of the lists finds 99.3% of these comparing 17% of the vectors (LoCoMo's turns: 94.1%, under 22%).
  it("finds ≥ 98% of the neighbours at ≥ 0.6 (conversations' threshold) with a sixth of the lists", () => {
    expect(turns.length).toBeGreaterThan(2000);
    const { recall, pairs, scannedShare } = measure(vectors, lists, lists.probesFor(0.6), [0.6], 7);
    expect(pairs[0]).toBeGreaterThan(200);
    expect(recall[0]).toBeGreaterThanOrEqual(0.98);
    expect(scannedShare).toBeLessThan(0.2);
  });
});

describe("vectors as hex", () => {
  it("round-trip exactly, in either case", () => {
    const v = embedder.embedOne(tokenize("Hex carries every bit of the float32 values").join(" "));
    v[0] = -0;
    v[1] = 1e-30;
    expect(fromHex(toHex(v))).toEqual(v);
    expect(fromHex(toHex(v).toUpperCase())).toEqual(v);
    expect(toHex(Float32Array.of(1))).toBe("0000803f");
  });
});
