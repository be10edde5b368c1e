import { describe, expect, it } from "vitest";
import { type ContextCandidate, fillContext } from "../src/core/context/context-fill";
import type { StoredItem } from "../src/core/memory/item-reads";
import { workerTokenCounter } from "./helpers";

// How memory_context_build fills its budget (src/core/context/context-fill.ts): ranked entries first, each whole or
// summarized, a derived memory's folded turns after it, then its other source turns while the budget lasts.

const item = (id: string, tokens: number, content = `${id} `.repeat(tokens).trim()): StoredItem => ({
  id,
  project: "p",
  kind: id.startsWith("m") ? "memory" : "message",
  type: "note",
  content,
  tokens,
  importance: 0.5,
  tier: "active",
  conversationId: id.startsWith("m") ? null : "c",
  createdAt: 0,
  derived: null,
});
const candidate = (
  head: StoredItem,
  similarity: number,
  extra: Partial<Pick<ContextCandidate, "folded" | "sources" | "source">> = {},
): ContextCandidate => ({ item: head, similarity, source: "direct", folded: [], sources: [], ...extra });

describe("filling a context's budget", async () => {
  const counter = await workerTokenCounter("o200k_base");
  const options = { autoSummarize: false, query: "q", counter };
  const ids = (memories: { id: string }[]) => memories.map((m) => m.id);

  it("gives a memory's other sources only what the ranked entries leave, each right after its memory", () => {
    const memory = candidate(item("m1", 10), 0.9, {
      folded: [{ item: item("t1", 10), similarity: 0.8 }],
      sources: [item("t2", 30), item("t3", 5)],
    });
    const next = candidate(item("t9", 40), 0.5);
    // 100 tokens: the ranked 60, then t2 (30) and t3 (5).
    const all = fillContext([memory, next], 100, 0, options);
    expect(ids(all.memories)).toEqual(["m1", "t1", "t2", "t3", "t9"]);
    expect(all.memories.map((m) => [m.source, m.sourceOf])).toEqual([
      ["direct", undefined],
      ["direct", "m1"],
      ["related", "m1"],
      ["related", "m1"],
      ["direct", undefined],
    ]);
    expect(all.memories[2]!.similarity).toBe(0.9);
    expect([all.used, all.truncated]).toEqual([95, false]);
    // 80 tokens: the ranked 60 whole, then t3 (5) fits where t2 (30) does not; nothing ranked was left out.
    const tight = fillContext([memory, next], 80, 0, options);
    expect(ids(tight.memories)).toEqual(["m1", "t1", "t3", "t9"]);
    expect([tight.used, tight.truncated]).toEqual([65, false]);
  });

  it("never shows an item twice, and counts what comes before it (a profile) against the budget", () => {
    const shared = item("t1", 10);
    const a = candidate(item("m1", 10), 0.9, { sources: [shared] });
    const b = candidate(item("m2", 10), 0.8, { folded: [{ item: shared, similarity: 0.7 }] });
    const filled = fillContext([a, b], 45, 15, options);
    // m2's folded turn ranked, so it is placed with m2, not again as m1's source; 15 + 30 = 45.
    expect(ids(filled.memories)).toEqual(["m1", "m2", "t1"]);
    expect(filled.memories[2]).toMatchObject({ source: "direct", sourceOf: "m2" });
    expect(filled.used).toBe(45);
  });

  it("summarizes a ranked entry into what is left, never a source turn", () => {
    const long = "Caroline moved to Boston. She likes the harbour. The winters are cold. Rent is high there.";
    const memory = candidate(item("m1", 10), 0.9, { sources: [item("t2", counter.count(long), long)] });
    const ranked = candidate(item("d1", counter.count(long), long), 0.5);
    const filled = fillContext([memory, ranked], 20, 0, { ...options, autoSummarize: true, query: "Boston" });
    expect(ids(filled.memories)).toEqual(["m1", "d1"]);
    expect(filled.memories[1]).toMatchObject({ summarized: true });
    expect(filled.memories[1]!.tokens).toBe(counter.count(filled.memories[1]!.content));
    expect(filled.used).toBeLessThanOrEqual(20);
    expect(filled.truncated).toBe(true);
  });
});
