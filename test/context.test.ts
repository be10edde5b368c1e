import { describe, expect, it } from "vitest";
import { call, callTool, newTenant, workerTokenCounter } from "./helpers";

/** Deterministic PRNG (mulberry32) so property tests are reproducible. */
function random(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SAMPLES = [
  "The quarterly report shows revenue growth of 12% driven by the enterprise segment. Churn fell to 3%.",
  "我们下周三在东京开会，讨论新产品的发布计划。请准备好预算表。",
  "function retry(fn, n = 3) {\n  for (let i = 0; i < n; i++) {\n    try { return fn(); } catch (e) { if (i === n - 1) throw e; }\n  }\n}",
  "Deploy 🚀 finished at 10:42 — rollback plan: `kubectl rollout undo deploy/api` if p95 > 300ms!",
  "Der Kunde möchte die Lieferung bis Freitag. Éléments spéciaux: naïve café, ß, ø, å.",
  "한국어 문장도 포함됩니다. 토큰 수를 정확히 세야 합니다.",
];

function randomText(next: () => number, sentences: number): string {
  return Array.from({ length: sentences }, () => SAMPLES[Math.floor(next() * SAMPLES.length)]!).join(
    next() < 0.3 ? "\n\n" : " ",
  );
}

describe("build_context", () => {
  it("answers seed 000's shape with an exact token count", async () => {
    const t = await newTenant();
    const result = await call(t.apiKey, "build_context", {
      documents: [
        { content: "Document 1 content...", id: "doc1" },
        { content: "Document 2 content...", id: "doc2" },
      ],
      max_tokens: 4000,
    });
    expect(result).toEqual({
      success: true,
      context: "Document 1 content...\n\nDocument 2 content...",
      token_count: (await workerTokenCounter("o200k_base")).count("Document 1 content...\n\nDocument 2 content..."),
      documents_included: 2,
      documents_truncated: 0,
      documents_omitted: 0,
    });
  });

  it("counts special-token text such as <|endoftext|> as plain text", async () => {
    const t = await newTenant();
    const result = await call(t.apiKey, "build_context", {
      documents: [{ content: "a <|endoftext|> b" }],
      max_tokens: 100,
    });
    expect(result).toMatchObject({ context: "a <|endoftext|> b", token_count: 9, documents_included: 1 }); // js-tiktoken's encode(text, [], [])
  });

  it("never exceeds max_tokens, for random documents and budgets (property)", async () => {
    const t = await newTenant();
    const counter = await workerTokenCounter("o200k_base");
    const next = random(42);
    for (let run = 0; run < 25; run++) {
      const documents = Array.from({ length: 1 + Math.floor(next() * 8) }, (_, i) => ({
        id: `d${i}`,
        content: randomText(next, 1 + Math.floor(next() * 60)),
      }));
      const maxTokens = 100 + Math.floor(next() * 1500);
      const result = await call(t.apiKey, "build_context", { documents, max_tokens: maxTokens });
      expect(result.token_count, `run ${run}`).toBe(counter.count(result.context));
      expect(result.token_count, `run ${run}`).toBeLessThanOrEqual(maxTokens);
      expect(result.documents_included + result.documents_omitted).toBe(documents.length);
      if (result.documents_truncated === 0 && result.documents_omitted === 0)
        expect(result.context).toBe(documents.map((d) => d.content).join("\n\n"));
      else expect(result.token_count).toBeGreaterThan(maxTokens * 0.8); // it filled the window
    }
  });

  it("rejects max_tokens outside 100-32000", async () => {
    const t = await newTenant();
    const response = await callTool(t.apiKey, "build_context", { documents: [{ content: "x" }], max_tokens: 50 });
    expect(response.error!.message).toBe("Invalid parameter 'max_tokens': value must be at least 100 (got 50)");
  });
});

describe("memory_context_build", () => {
  it("stays within the budget minus the 10% buffer, with exact token counts (property)", async () => {
    const t = await newTenant();
    const counter = await workerTokenCounter("o200k_base");
    const next = random(7);
    const memories = Array.from({ length: 40 }, (_, i) => ({
      content: `Memory ${i}: ${randomText(next, 1 + Math.floor(next() * 25))}`,
      importance: next(),
    }));
    await call(t.apiKey, "memory_batch_store", { memories, namespace: "prop" });
    const queries = [
      "revenue growth report",
      "東京 会议 预算",
      "retry function code",
      "deploy rollback kubectl",
      "Lieferung Freitag",
      "토큰 문장",
    ];
    for (let run = 0; run < 24; run++) {
      const budget = 100 + Math.floor(next() * 3000);
      const result = await call(t.apiKey, "memory_context_build", {
        query: queries[run % queries.length],
        token_budget: budget,
        namespace: "prop",
        min_similarity: 0,
        use_cache: false,
        strategy: (["relevance", "importance", "recency"] as const)[run % 3],
      });
      expect(result.total_tokens, `run ${run}`).toBeLessThanOrEqual(Math.floor(budget * 0.9));
      expect(result.total_tokens).toBe(result.memories.reduce((s: number, m: any) => s + m.tokens, 0));
      for (const m of result.memories) expect(m.tokens, `run ${run}`).toBe(counter.count(m.content));
      expect(result).toMatchObject({ token_budget: budget, memory_count: result.memories.length, cache_hit: false });
    }
  });

  it("adds related memories by BFS over links, scored by path, within max_depth", async () => {
    const t = await newTenant();
    const [a, b, c, d] = (
      await call(t.apiKey, "memory_batch_store", {
        memories: [
          { content: "The login service issues JWT tokens signed with RS256." },
          { content: "Key rotation happens on the first Monday of each month." },
          { content: "The on-call rotation is documented in the wiki." },
          { content: "Unrelated: the office plant needs water on Fridays." },
        ],
      })
    ).ids;
    await call(t.apiKey, "link_resources", {
      source_id: a,
      target_id: b,
      relationship_type: "depends_on",
      weight: 0.9,
    });
    await call(t.apiKey, "link_resources", {
      source_id: c,
      target_id: b,
      relationship_type: "related_to",
      weight: 0.5,
    }); // incoming edges count too
    await call(t.apiKey, "link_resources", {
      source_id: c,
      target_id: a,
      relationship_type: "related_to",
      weight: 0.1,
    }); // a cycle a-b-c-a
    const build = (args: object) =>
      call(t.apiKey, "memory_context_build", {
        query: "JWT login tokens",
        token_budget: 2000,
        use_cache: false,
        ...args,
      });

    const deep = await build({ max_depth: 2 });
    const byId = new Map(deep.memories.map((m: any) => [m.id, m]));
    expect(byId.get(a)).toMatchObject({ source: "direct", summarized: false });
    const direct = (byId.get(a) as any).similarity;
    expect(byId.get(b)).toMatchObject({ source: "related", similarity: Math.round(direct * 0.9 * 10_000) / 10_000 });
    expect(byId.get(c)).toMatchObject({ source: "related" }); // via a-c (0.1) at depth 1
    expect(byId.has(d)).toBe(false);

    const shallow = await build({ max_depth: 1, include_related: true });
    expect(shallow.memories.map((m: any) => m.id).sort()).toEqual([a, b, c].sort());
    const none = await build({ include_related: false });
    expect(none.memories.map((m: any) => m.id)).toEqual([a]);
  });

  it("summarizes a long memory into the budget that is left", async () => {
    const t = await newTenant();
    const long =
      Array.from({ length: 80 }, (_, i) => `Fact ${i} about the billing system and invoices.`).join(" ") +
      " The invoice retry policy is three attempts.";
    await call(t.apiKey, "memory_store", { content: long });
    const result = await call(t.apiKey, "memory_context_build", {
      query: "invoice retry policy",
      token_budget: 200,
      use_cache: false,
    });
    expect(result.memories).toHaveLength(1);
    expect(result.memories[0]).toMatchObject({ summarized: true, source: "direct" });
    expect(result.memories[0].content).toContain("The invoice retry policy is three attempts.");
    expect(result.total_tokens).toBeLessThanOrEqual(180);
    expect(result.truncated).toBe(true);
    const off = await call(t.apiKey, "memory_context_build", {
      query: "invoice retry policy",
      token_budget: 200,
      auto_summarize: false,
      use_cache: false,
    });
    expect(off).toMatchObject({ memory_count: 0, total_tokens: 0, truncated: true });
  });

  it("orders by importance or recency on request, and filters by min_similarity and namespace", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", {
      namespace: "prefs",
      memories: [
        { content: "User prefers dark mode in the editor", importance: 0.2 },
        { content: "User prefers tabs over spaces in the editor", importance: 0.9 },
      ],
    });
    await call(t.apiKey, "memory_store", { namespace: "other", content: "User prefers the editor font size 14" });
    const byImportance = await call(t.apiKey, "memory_context_build", {
      query: "editor preferences",
      token_budget: 1000,
      namespace: "prefs",
      strategy: "importance",
      use_cache: false,
    });
    expect(byImportance.memories.map((m: any) => m.content)).toEqual([
      "User prefers tabs over spaces in the editor",
      "User prefers dark mode in the editor",
    ]);
    const strict = await call(t.apiKey, "memory_context_build", {
      query: "editor preferences",
      token_budget: 1000,
      namespace: "prefs",
      min_similarity: 1,
      use_cache: false,
    });
    expect(strict.memory_count).toBeLessThanOrEqual(1);
    const everywhere = await call(t.apiKey, "memory_context_build", {
      query: "editor preferences",
      token_budget: 1000,
      use_cache: false,
    });
    expect(everywhere.memory_count).toBe(3);
  });

  it("rejects bad input, naming the parameter and the range", async () => {
    const t = await newTenant();
    const bad = async (args: object) =>
      (await callTool(t.apiKey, "memory_context_build", { query: "x", token_budget: 1000, ...args })).error!;
    expect((await bad({ token_budget: 10 })).message).toBe(
      "Invalid parameter 'token_budget': value must be at least 100 (got 10)",
    );
    expect((await bad({ max_depth: 6 })).message).toBe(
      "Invalid parameter 'max_depth': value must be at most 5 (got 6)",
    );
    expect((await bad({ max_depth: 0 })).data.details.parameter).toBe("max_depth");
    expect((await bad({ strategy: "random" })).message).toBe(
      'Invalid parameter \'strategy\': must be one of "relevance", "importance", "recency" (got "random")',
    );
    expect((await bad({ min_similarity: 1.5 })).data.details.parameter).toBe("min_similarity");
  });
});

describe("semantic cache", () => {
  it("hits on the same or an equivalent query, misses after any write to the namespace, and counts truly", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { namespace: "ns", content: "User prefers dark mode" });
    const build = (query: string) =>
      call(t.apiKey, "memory_context_build", { query, token_budget: 1000, namespace: "ns" });
    const stats = () => call(t.apiKey, "memory_cache_stats");

    expect((await build("user preferences dark mode")).cache_hit).toBe(false);
    await expect.poll(async () => (await stats()).size).toBe(1);
    const hit = await build("User preferences: dark mode?"); // same words, so the same embedding
    expect(hit).toMatchObject({ cache_hit: true, memory_count: 1 });
    expect((await build("what time is the standup")).cache_hit).toBe(false);

    await call(t.apiKey, "memory_store", { namespace: "ns", content: "User also prefers large fonts" });
    expect((await build("user preferences dark mode")).cache_hit).toBe(false); // never staler than the last write
    await expect.poll(async () => (await stats()).hit_count).toBe(1);
    const s = await stats();
    expect(s).toMatchObject({
      enabled: true,
      max_size: 1000,
      hit_count: 1,
      miss_count: 3,
      hit_rate: 0.25,
      ttl_seconds: 3600,
    });
    await expect.poll(async () => (await stats()).size).toBe(1); // entries of the old generation are not live
    expect((await stats()).memory_usage_bytes).toBeGreaterThan(50);
  });

  it("keeps tenants' caches apart and skips the cache when use_cache is false", async () => {
    const a = await newTenant();
    const b = await newTenant();
    await call(a.apiKey, "memory_store", { content: "Alpha secret plan" });
    await call(a.apiKey, "memory_context_build", { query: "secret plan", token_budget: 500 });
    await expect.poll(async () => (await call(a.apiKey, "memory_cache_stats")).size).toBe(1);
    const other = await call(b.apiKey, "memory_context_build", { query: "secret plan", token_budget: 500 });
    expect(other).toMatchObject({ cache_hit: false, memory_count: 0 });
    const uncached = await call(a.apiKey, "memory_context_build", {
      query: "secret plan",
      token_budget: 500,
      use_cache: false,
    });
    expect(uncached.cache_hit).toBe(false);
    expect((await call(b.apiKey, "memory_cache_stats")).hit_count).toBe(0);
  });

  it("clears by pattern or entirely", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "Some fact about billing and invoices" });
    for (const query of ["billing invoices", "billing history", "invoice numbers"])
      await call(t.apiKey, "memory_context_build", { query, token_budget: 500 });
    await expect.poll(async () => (await call(t.apiKey, "memory_cache_stats")).size).toBe(3);
    expect(await call(t.apiKey, "memory_cache_clear", { pattern: "billing*" })).toEqual({
      cleared: true,
      entries_removed: 2,
    });
    expect(await call(t.apiKey, "memory_cache_clear")).toEqual({ cleared: true, entries_removed: 1 });
    expect((await call(t.apiKey, "memory_cache_stats")).size).toBe(0);
    expect(
      (await call(t.apiKey, "memory_context_build", { query: "invoice numbers", token_budget: 500 })).cache_hit,
    ).toBe(false);
  });
});

describe("get_context", () => {
  it("reads the messages around a search hit, in order", async () => {
    const t = await newTenant();
    for (let i = 0; i < 9; i++) {
      await call(t.apiKey, "log_chat", {
        conversation_id: "sess-1",
        role: i % 2 ? "assistant" : "user",
        content: `message ${i}${i === 4 ? " about the zeppelin" : ""}`,
        project_id: "proj",
      });
    }
    const hit = (await call(t.apiKey, "search", { query: "zeppelin" })).results[0];
    const around = await call(t.apiKey, "get_context", { chunk_id: hit.chunk_id });
    expect(around.anchor).toMatchObject({
      chunk_id: hit.chunk_id,
      content: "message 4 about the zeppelin",
      role: "user",
    });
    expect(around.before.map((c: any) => c.content)).toEqual(["message 1", "message 2", "message 3"]);
    expect(around.after.map((c: any) => c.content)).toEqual(["message 5", "message 6", "message 7"]);
    expect(around).toMatchObject({ session_id: "sess-1", project: "proj" });
    const before = await call(t.apiKey, "get_context", { chunk_id: hit.chunk_id, direction: "before", count: 10 });
    expect(before.before).toHaveLength(4);
    expect(before.after).toEqual([]);
    const after = await call(t.apiKey, "get_context", { chunk_id: hit.chunk_id, direction: "after", count: 1 });
    expect(after.after.map((c: any) => c.content)).toEqual(["message 5"]);
  });

  it("reads neighbouring chunks of a document", async () => {
    const t = await newTenant();
    const content = Array.from(
      { length: 60 },
      (_, i) => `Section ${i}: the migration step number ${i} is described here in words.`,
    ).join("\n\n");
    await call(t.apiKey, "store_memory", { file_name: "guide.md", content });
    const hit = (await call(t.apiKey, "search", { query: "Section 30", mode: "keyword", limit: 1 })).results[0];
    const around = await call(t.apiKey, "get_context", { chunk_id: hit.chunk_id, count: 1 });
    expect(around.session_id).toBe("");
    expect(around.before.length + around.after.length).toBeGreaterThanOrEqual(1);
    for (const c of [...around.before, ...around.after]) expect(c.content).toContain("Section");
  });

  it("answers 'Chunk not found' for a missing or foreign chunk and rejects count over 10", async () => {
    const a = await newTenant();
    const b = await newTenant();
    await call(a.apiKey, "log_chat", { conversation_id: "s", role: "user", content: "private words" });
    const chunkId = (await call(a.apiKey, "search", { query: "private words" })).results[0].chunk_id;
    for (const id of [chunkId, 999_999_999]) {
      const response = await callTool(b.apiKey, "get_context", { chunk_id: id });
      expect(response.error).toMatchObject({ code: -32000, message: "Chunk not found", data: { code: "NOT_FOUND" } });
    }
    expect((await callTool(a.apiKey, "get_context", { chunk_id: chunkId, count: 11 })).error!.message).toBe(
      "Invalid parameter 'count': value must be at most 10 (got 11)",
    );
    expect(
      (await callTool(a.apiKey, "get_context", { chunk_id: chunkId, direction: "sideways" })).error!.data.details
        .parameter,
    ).toBe("direction");
  });
});
