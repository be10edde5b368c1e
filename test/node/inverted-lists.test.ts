import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LocalEmbedder } from "../../src/adapters/local-embedder";
import { insertTopK, InvertedLists, type ScoredId } from "../../src/adapters/inverted-lists";
import { dot } from "../../src/core/shared/vector-math";

// The local index's auto-link path probes inverted lists instead of scanning every vector: on real
// passages (MS MARCO, the local embedder) it must find nearly all of the exact neighbours while
// comparing a fraction of the vectors.

const passages = readFileSync(new URL("../../../shared/data/msmarco/corpus.jsonl", import.meta.url), "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => (JSON.parse(line) as { text: string }).text);

describe("inverted lists over 5,000 passage vectors", async () => {
  const embedder = new LocalEmbedder(256);
  const vectors = new Map((await embedder.embed(passages)).map((v, i) => [i + 1, v]));
  const lists = new InvertedLists(vectors);
  const exact = (query: Float32Array): ScoredId[] => {
    const top: ScoredId[] = [];
    for (const [chunkId, v] of vectors) insertTopK(top, { chunkId, score: dot(query, v) }, 21);
    return top;
  };

  // Auto-link keeps neighbours at ≥ 0.6 (conversations) or ≥ 0.8 (documents) similarity.
  it("finds ≥ 97% of the exact neighbours at similarity ≥ 0.5 (≥ 85% of the whole top 20), comparing under a fifth of the vectors", () => {
    let found = 0;
    let wanted = 0;
    let foundClose = 0;
    let wantedClose = 0;
    let scanned = 0;
    const queries = [...vectors.keys()].filter((id) => id % 25 === 0); // 200 passages as the new items
    for (const id of queries) {
      const query = vectors.get(id)!;
      const truth = exact(query);
      const all = new Set(truth.map((m) => m.chunkId));
      const close = new Set(truth.filter((m) => m.score >= 0.5).map((m) => m.chunkId));
      const got = lists.query(query, 21, lists.probes);
      scanned += lists.lastScanned;
      found += got.filter((m) => all.has(m.chunkId)).length;
      wanted += all.size;
      foundClose += got.filter((m) => close.has(m.chunkId)).length;
      wantedClose += close.size;
    }
    expect(foundClose / wantedClose).toBeGreaterThanOrEqual(0.97);
    expect(found / wanted).toBeGreaterThanOrEqual(0.85);
    expect(scanned / queries.length).toBeLessThan(vectors.size / 5);
  });

  it("places added and rewritten vectors where queries find them", () => {
    const copy = new InvertedLists(vectors);
    const fresh = embedder.embedOne("zebra quantum chromodynamics lecture notes");
    copy.add(99_999, fresh);
    expect(copy.query(fresh, 1, copy.probes)[0]).toMatchObject({ chunkId: 99_999 });
    copy.add(99_999, vectors.get(7)!); // rewritten: moves to its new list, found by the new vector
    expect(copy.query(vectors.get(7)!, 2, copy.probes).map((m) => m.chunkId).sort((a, b) => a - b)).toEqual([7, 99_999]);
    expect(copy.size).toBe(vectors.size + 1);
  });
});
