import { describe, expect, it } from "vitest";
import { call, newTenant, type TestTenant, waitForEmbeddings } from "./helpers";

// Scores that mean something (src/core/search/relevance.ts): absolute, comparable across queries, and
// nothing at all when nothing stored is relevant. Through /jsonrpc, after the embed jobs have run.

const MEMORIES = [
  "Postgres backups run nightly at two in the morning and are kept for thirty days.",
  "The staging cluster autoscaler adds nodes when the queue grows.",
  "Our team lunch is every Thursday at noon in the cafeteria.",
  "Invoices are sent on the first business day of each month.",
  "The mobile app release train leaves every second Tuesday.",
  "Passwords must be rotated every ninety days by the security team.",
];

async function loadedTenant(): Promise<TestTenant> {
  const t = await newTenant();
  await call(t.apiKey, "memory_batch_store", { namespace: "ops", memories: MEMORIES.map((content) => ({ content })) });
  await call(t.apiKey, "store_memory", {
    file_name: "src/retry.ts",
    content: "function retry() { return backoff(attempts) }",
    resource_type: "code",
  });
  await call(t.apiKey, "add_message", {
    contextId: "trip",
    message: "We should book the train to Lyon for the conference",
    role: "user",
  });
  await call(t.apiKey, "add_message", {
    contextId: "trip",
    message: "The train to Lyon leaves at nine",
    role: "assistant",
  });
  await call(t.apiKey, "add_message", {
    contextId: "cooking",
    message: "Add salt to the pasta water before it boils",
    role: "user",
  });
  await waitForEmbeddings(t.tenantId);
  return t;
}

describe("abstention", () => {
  it("a query of words stored nowhere gets nothing from any search tool, whatever the mode or threshold", async () => {
    const t = await loadedTenant();
    for (const query of ["zebra quantum chromodynamics", "quokka narwhal", "Explain the Doppler effect of quasars"]) {
      for (const mode of ["hybrid", "keyword", "vector"]) {
        expect((await call(t.apiKey, "search", { query, mode, limit: 50 })).results, `${query} ${mode}`).toEqual([]);
      }
      expect(await call(t.apiKey, "get_similar_contexts", { query, limit: 50 }), query).toEqual([]);
      expect((await call(t.apiKey, "retrieve_by_type", { query, doc_type: "note", top_k: 50 })).results, query).toEqual(
        [],
      );
      expect((await call(t.apiKey, "retrieve_by_type", { query, doc_type: "code", top_k: 50 })).results, query).toEqual(
        [],
      );
      expect((await call(t.apiKey, "query_graph", { query, limit: 50 })).results, query).toEqual([]);
      const built = await call(t.apiKey, "memory_context_build", {
        query,
        token_budget: 4000,
        min_similarity: 0,
        use_cache: false,
      });
      expect(built, query).toMatchObject({ memories: [], memory_count: 0, total_tokens: 0 });
    }
  });
});

describe("abstention when most of the query is unknown", () => {
  it("a question whose other words nothing stored ever used gets nothing, though one of its words matches", async () => {
    const t = await loadedTenant();
    // "nightly" is stored; pizza, recipe and zebra never were: the question is about something else.
    expect(
      (await call(t.apiKey, "search", { query: "nightly pizza recipe for the zebra", limit: 10 })).results,
    ).toEqual([]);
    // Half of the query known still answers, with a low score.
    const half = await call(t.apiKey, "search", { query: "nightly pizza", limit: 10 });
    expect(half.results[0].content).toBe(MEMORIES[0]);
    expect(half.results[0].score).toBeLessThan(0.5);
  });
});

describe("scores are absolute", () => {
  it("a weak match's first hit scores below 1 and below a strong match's; an exact match scores near 1", async () => {
    const t = await loadedTenant();
    const strong = await call(t.apiKey, "search", { query: "nightly Postgres backups", limit: 5 });
    const weak = await call(t.apiKey, "search", { query: "nightly pizza", limit: 5 });
    expect(strong.results[0].content).toBe(MEMORIES[0]);
    expect(weak.results[0].content).toBe(MEMORIES[0]); // the same memory, found by one word of two
    expect(strong.results[0].score).toBeGreaterThan(0.8);
    expect(weak.results[0].score).toBeLessThan(0.5);
    expect(weak.results[0].score).toBeLessThan(strong.results[0].score);
    // Scores come in order and within 0..1.
    for (const found of [strong, weak]) {
      const scores = found.results.map((r: any) => r.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      for (const s of scores) expect(s > 0 && s <= 1).toBe(true);
    }
  });

  it("a memory just written (not embedded yet) scores on its keyword part alone, undiminished", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_store", {
      content: "The vault combination is kept by the facilities manager",
    });
    const found = await call(t.apiKey, "search", { query: "vault combination facilities manager" });
    expect(found.results[0]).toMatchObject({ item_id: stored.id });
    expect(found.results[0].score).toBeGreaterThan(0.9);
  });
});

describe("thresholds mean the same across queries", () => {
  it("memory_context_build's similarity is search's score, and min_similarity keeps exactly the hits at or above it", async () => {
    const t = await loadedTenant();
    for (const query of [
      "nightly Postgres backups",
      "nightly pizza",
      "rotate passwords every ninety days",
      "team lunch on Thursday",
    ]) {
      const found = await call(t.apiKey, "search", { query, project: "ops", limit: 50 });
      const scoreOf = new Map<string, number>();
      for (const r of found.results) if (!scoreOf.has(r.item_id)) scoreOf.set(r.item_id, r.score);
      for (const threshold of [0, 0.3, 0.5, 0.8]) {
        const built = await call(t.apiKey, "memory_context_build", {
          query,
          token_budget: 4000,
          namespace: "ops",
          include_related: false,
          min_similarity: threshold,
          use_cache: false,
        });
        const expected = [...scoreOf].filter(([, s]) => s >= threshold);
        expect(built.memories.map((m: any) => [m.id, m.similarity]).sort(), `${query} @ ${threshold}`).toEqual(
          expected.sort(),
        );
      }
    }
    // The same threshold, two queries: the strong match passes 0.5, the weak one (old ranks gave both 1.0) does not.
    const strict = (query: string) =>
      call(t.apiKey, "memory_context_build", { query, token_budget: 4000, namespace: "ops", use_cache: false });
    expect((await strict("nightly Postgres backups")).memory_count).toBe(1);
    expect((await strict("nightly pizza recipe for the zebra")).memory_count).toBe(0);
  });
});

describe("similarity is a similarity", () => {
  it("get_similar_contexts reports the best message's score: high for the matching context, low for a word in common, absent for none", async () => {
    const t = await loadedTenant();
    const trip = await call(t.apiKey, "get_similar_contexts", { query: "train to Lyon", limit: 5 });
    expect(trip.map((c: any) => c.contextId)).toEqual(["trip"]);
    expect(trip[0].similarity).toBeGreaterThan(0.8);
    const found = await call(t.apiKey, "search", { query: "train to Lyon", kinds: ["message"], limit: 1 });
    expect(trip[0].similarity).toBe(found.results[0].score);
    // One shared word ("pasta") among words stored nowhere: a weak similarity, not 1.
    const weak = await call(t.apiKey, "get_similar_contexts", { query: "pasta with pecorino", limit: 5 });
    expect(weak.map((c: any) => c.contextId)).toEqual(["cooking"]);
    expect(weak[0].similarity).toBeLessThan(0.5);
    expect(weak[0].similarity).toBeGreaterThan(0);
  });

  it("search's similarity is the cosine of the embeddings: 1 for the very text, and it does not depend on the rank", async () => {
    const t = await loadedTenant();
    const same = await call(t.apiKey, "search", { query: MEMORIES[3], project: "ops", limit: 3 });
    expect(same.results[0].content).toBe(MEMORIES[3]);
    expect(same.results[0].similarity).toBeCloseTo(1, 3);
    const partial = await call(t.apiKey, "search", { query: "invoices", project: "ops", limit: 3 });
    expect(partial.results[0].content).toBe(MEMORIES[3]);
    expect(partial.results[0].similarity).toBeGreaterThan(0);
    expect(partial.results[0].similarity).toBeLessThan(0.9);
  });
});
