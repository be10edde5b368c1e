import { describe, expect, it } from "vitest";
import { termFreqs } from "../../src/core/keyword-index/term-freqs";
import { pairShare, queryPairs } from "../../src/core/search/proximity";
import { keywordCode } from "../../src/shared/fts-text";

/** The proximity stage's word pairs (src/core/search/proximity.ts). */

const TENANT = "tn_proximity";
const pairsOf = (query: string) => queryPairs(TENANT, query)?.pairs ?? null;
const share = (query: string, content: string, indexed = true) =>
  pairShare(queryPairs(TENANT, query)!, content, indexed ? termFreqs(keywordCode(TENANT), content, "", 0.5) : null);

describe("proximity", () => {
  it("pairs the query's adjacent words as the index keys them: stemmed, base forms, function words and repeats left out", () => {
    expect(pairsOf("When did Melanie buy the figurines?")).toEqual([
      ["melani", "bui"],
      ["bui", "figurin"],
    ]);
    expect(pairsOf("Bought BOUGHT figurines")).toEqual([["bui", "figurin"]]);
    expect(pairsOf("the pottery")).toBeNull();
    expect(pairsOf("what is it?")).toBeNull();
    // A pair asked twice counts once.
    expect(pairsOf("red car red car")).toEqual([
      ["red", "car"],
      ["car", "red"],
    ]);
  });

  it("counts the share of pairs a text holds side by side and in order, skipping function words between them", () => {
    expect(share("pottery class", "I took a pottery class.")).toBe(1);
    expect(share("pottery class", "The class was about pottery.")).toBe(0);
    expect(share("pottery class", "Pottery is fun; the class is long.")).toBe(0);
    expect(share("Melanie bought figurines", "Melanie bought the figurines yesterday.")).toBe(1);
    expect(share("Melanie bought figurines", "She bought the figurines for Melanie.")).toBe(0.5);
    // A text indexed before the forward index existed is read word by word alike.
    expect(share("Melanie bought figurines", "She bought the figurines for Melanie.", false)).toBe(0.5);
    // A pair held twice counts once.
    expect(share("pottery class", "pottery class, then another pottery class")).toBe(1);
  });

  it("reads a text word by word only when its forward index holds both words of a pair", () => {
    const query = queryPairs(TENANT, "pottery class")!;
    const read: string[] = [];
    const counting = { ...query, keyOf: (token: string) => (read.push(token), query.keyOf(token)) };
    expect(
      pairShare(
        counting,
        "A long text about gardens and weather.",
        termFreqs(keywordCode(TENANT), "A long text about gardens and weather.", "", 0.5),
      ),
    ).toBe(0);
    expect(read).toEqual([]);
    expect(
      pairShare(counting, "The pottery class.", termFreqs(keywordCode(TENANT), "The pottery class.", "", 0.5)),
    ).toBe(1);
    expect(read.length).toBeGreaterThan(0);
  });
});
