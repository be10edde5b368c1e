import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LocalEmbedder, tokenize } from "../../src/adapters/local-embedder";
import { insertTopK, InvertedLists, type ScoredId } from "../../src/adapters/inverted-lists";
import { dot, fromHex, toHex } from "../../src/core/shared/vector-math";

// The local index's auto-link path probes inverted lists instead of scanning every vector: on real
// texts (MS MARCO passages, LoCoMo turns as log_chat indexes them; the local embedder) it must find
// nearly all of the exact neighbours above auto-link's thresholds while comparing a fraction of the vectors.

const data = new URL("../../../shared/data/", import.meta.url);
const passages = readFileSync(new URL("msmarco/corpus.jsonl", data), "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => (JSON.parse(line) as { text: string }).text);

/** LoCoMo turns with the context log_chat gives them: the speaker, then the start of the previous turn. */
function locomoTurns(): string[] {
  const samples = JSON.parse(readFileSync(new URL("locomo/locomo-dev.json", data), "utf8")) as { conversation: Record<string, unknown> }[];
  const turns: string[] = [];
  for (const { conversation } of samples) {
    let previous: string | undefined;
    for (let n = 1; conversation[`session_${n}`]; n++) {
      for (const turn of conversation[`session_${n}`] as { speaker: string; text: string }[]) {
        turns.push(`${[turn.speaker, previous?.slice(0, 300)].filter(Boolean).join("\n")}\n${turn.text}`);
        previous = turn.text;
      }
    }
  }
  return turns;
}

const embedder = new LocalEmbedder(256);

/** Share of the exact top-20 neighbours (the query itself excluded) at or above each threshold that the lists find. */
function measure(vectors: Map<number, Float32Array>, lists: InvertedLists, probes: number, thresholds: number[], every: number) {
  const found = thresholds.map(() => 0);
  const wanted = thresholds.map(() => 0);
  let scanned = 0;
  const queries = [...vectors.keys()].filter((id) => id % every === 0);
  for (const id of queries) {
    const query = vectors.get(id)!;
    const truth: ScoredId[] = [];
    for (const [chunkId, v] of vectors) if (chunkId !== id) insertTopK(truth, { chunkId, score: dot(query, v) }, 20);
    const got = new Set(lists.query(query, 21, { probes }).map((m) => m.chunkId));
    scanned += lists.lastScanned;
    thresholds.forEach((threshold, t) => {
      for (const m of truth) {
        if (m.score < threshold) continue;
        wanted[t]!++;
        if (got.has(m.chunkId)) found[t]!++;
      }
    });
  }
  return { recall: thresholds.map((_, t) => found[t]! / wanted[t]!), scannedShare: scanned / queries.length / vectors.size };
}

describe("inverted lists over 5,000 passage vectors", async () => {
  const vectors = new Map((await embedder.embed(passages)).map((v, i) => [i + 1, v]));
  const lists = InvertedLists.clustered(256, [...vectors]);

  // Auto-link keeps neighbours at ≥ 0.6 (conversations) or ≥ 0.8 (documents) similarity. With one k-means
  // refinement (the index before) a sixth of the lists found 98.2% of these at ≥ 0.5 and 99.3% at ≥ 0.8;
  // three refinements (on a sample of 48 vectors a list) find over 99.5%, at ≥ 0.8 with a tenth of the lists.
  it("finds all but a few of the exact neighbours at ≥ 0.5 with a sixth of the lists, comparing under a fifth of the vectors", () => {
    const { recall, scannedShare } = measure(vectors, lists, lists.probesFor(), [0.5, 0.8], 25);
    expect(recall[0]).toBeGreaterThanOrEqual(0.995);
    expect(recall[1]).toBeGreaterThanOrEqual(0.995);
    expect(scannedShare).toBeLessThan(0.2);
  });

  it("finds the neighbours at ≥ 0.8 (documents' threshold) with a tenth of the lists, comparing an eighth of the vectors", () => {
    expect(lists.probesFor(0.8)).toBeLessThan(lists.probesFor(0.6));
    const { recall, scannedShare } = measure(vectors, lists, lists.probesFor(0.8), [0.8], 25);
    expect(recall[0]).toBeGreaterThanOrEqual(0.995);
    expect(scannedShare).toBeLessThan(0.125);
  });

  it("keeps the neighbours of vectors added after the lists were built (double the size, as before a rebuild)", () => {
    const grown = InvertedLists.clustered(256, [...vectors].slice(0, 2500));
    for (const [id, v] of [...vectors].slice(2500)) grown.add(id, v);
    const { recall } = measure(vectors, grown, grown.probesFor(0.8), [0.8], 25);
    expect(recall[0]).toBeGreaterThanOrEqual(0.99);
  });

  it("places added, rewritten and deleted vectors where queries find them", () => {
    const copy = lists.rebuilt();
    const fresh = embedder.embedOne("zebra quantum chromodynamics lecture notes");
    copy.add(99_999, fresh);
    expect(copy.query(fresh, 1, { probes: copy.probesFor() })[0]).toMatchObject({ chunkId: 99_999 });
    copy.add(99_999, vectors.get(7)!); // rewritten: moves to its new list, found by the new vector
    expect(copy.query(vectors.get(7)!, 2, { probes: copy.probesFor() }).map((m) => m.chunkId).sort((a, b) => a - b)).toEqual([7, 99_999]);
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
    for (const options of [{ probes: lists.probesFor(0.8), minScore: 0.8 }, { probes: lists.probesFor() }, { minScore: 0.8 }, {}]) {
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
    same(lists.query(query, 10, { minScore: 0.39 }), truth.filter((m) => m.score >= 0.39));
  });
});

describe("inverted lists over LoCoMo turns", async () => {
  const turns = locomoTurns();
  const vectors = new Map((await embedder.embed(turns)).map((v, i) => [i + 1, v]));
  const lists = InvertedLists.clustered(256, [...vectors]);

  // Conversations link at ≥ 0.6. Turns are short and share their speakers and previous turns, so they
  // cluster less well than passages: the index before found 91.6% of these with a sixth of the lists, this one 94.1%. The lists near a
  // query are the fuller ones: a sixth of the lists holds about a fifth of the vectors.
  it("finds ≥ 92% of the neighbours at ≥ 0.6 (conversations' threshold) with a sixth of the lists", () => {
    expect(turns.length).toBeGreaterThan(2000);
    const { recall, scannedShare } = measure(vectors, lists, lists.probesFor(0.6), [0.6], 7);
    expect(recall[0]).toBeGreaterThanOrEqual(0.92);
    expect(scannedShare).toBeLessThan(0.22);
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
