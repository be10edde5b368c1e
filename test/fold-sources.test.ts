import { describe, expect, it } from "vitest";
import { foldSources } from "../src/core/search/fold-sources";

// How search folds a derived memory and its source turns into one result (src/core/search/fold-sources.ts), on hits
// named by item: "m..." a memory with its sources, "t..." a turn.

const SOURCES: Record<string, string[]> = { m1: ["t1", "t2"], m2: ["t2", "t3"], m3: ["t9"] };
const describeHit = (id: string) => ({ itemId: id.split("#")[0]!, sources: SOURCES[id.split("#")[0]!] ?? null });
const fold = (ranked: string[], limit: number) =>
  foldSources(ranked, limit, describeHit).map((r) => (r.folded.length ? `${r.hit}{${r.folded.join(",")}}` : r.hit));

describe("folding a derived memory and its source turns", () => {
  it("puts the memory where its best turn ranked, and the freed slot goes to the next hit", () => {
    expect(fold(["t1", "t5", "m1", "t6", "t7"], 3)).toEqual(["m1{t1}", "t5", "t6"]);
    // Both its turns above it: the best one's place, the other's freed too.
    expect(fold(["t2", "t5", "t1", "m1", "t6", "t7"], 4)).toEqual(["m1{t2,t1}", "t5", "t6", "t7"]);
  });

  it("takes in a turn that ranks below the memory while the results are not full", () => {
    expect(fold(["m1", "t5", "t1", "t6"], 3)).toEqual(["m1{t1}", "t5", "t6"]);
    // Full before the turn is met: it stays out, as it would have.
    expect(fold(["m1", "t5", "t6", "t1"], 3)).toEqual(["m1", "t5", "t6"]);
  });

  it("folds a turn only into a memory that ranks among the results", () => {
    expect(fold(["t1", "t5", "t6", "m1"], 3)).toEqual(["t1", "t5", "t6"]);
    // Met after the results are full, it would have freed two of them: it still ranks past them, and stays out.
    expect(fold(["t2", "t5", "t1", "m1", "t6"], 3)).toEqual(["t2", "t5", "t1"]);
  });

  it("gives a turn cited by two memories to the first, and never folds a memory into another", () => {
    expect(fold(["m1", "t2", "m2", "t3", "t4"], 3)).toEqual(["m1{t2}", "m2{t3}", "t4"]);
    expect(fold(["t2", "m2", "m1", "t4"], 3)).toEqual(["m2{t2}", "m1", "t4"]);
  });

  it("folds every chunk of a source turn that ranked, and leaves other hits in their order", () => {
    expect(fold(["t9#0", "t4", "t9#1", "m3", "t5", "t6"], 4)).toEqual(["m3{t9#0,t9#1}", "t4", "t5", "t6"]);
    expect(fold(["t4", "t5", "t6"], 2)).toEqual(["t4", "t5"]);
  });
});
