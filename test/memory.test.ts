import { describe, expect, it } from "vitest";
import { call, callTool, newTenant, tenantDb, waitForEmbeddings } from "./helpers";

const countItems = async (tenantId: string) =>
  (await (
    await tenantDb(tenantId)
  )
    .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ n: number }>())!.n;

describe("writing", () => {
  it("stores a memory with its token count and finds it by keyword at once", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_store", {
      content: "The deploy key rotates every 90 days",
      namespace: "ops",
      tags: ["security"],
    });
    expect(stored).toMatchObject({ success: true, namespace: "ops", tokens: 8, duplicate: false, duplicate_of: null });
    const found = await call(t.apiKey, "search", { query: "how often does the deploy key rotate?", mode: "keyword" });
    expect(found.results[0]).toMatchObject({
      item_id: stored.id,
      project: "ops",
      kind: "memory",
      type: "note",
      content: "The deploy key rotates every 90 days",
    });
    expect(found.results[0].chunk_id).toEqual(expect.any(Number));
  });

  it("dedupes identical content per project and says which id it matched", async () => {
    const t = await newTenant();
    const first = await call(t.apiKey, "memory_store", { content: "same words" });
    const again = await call(t.apiKey, "memory_store", { content: "same words" });
    expect(again).toMatchObject({ id: first.id, duplicate: true, duplicate_of: first.id });
    const elsewhere = await call(t.apiKey, "memory_store", { content: "same words", namespace: "other" });
    expect(elsewhere.id).not.toBe(first.id);
    const doc = await call(t.apiKey, "store_memory", { file_name: "a.md", content: "same words" });
    expect(doc.duplicate_of).toBe(first.id);
    const batch = await call(t.apiKey, "memory_batch_store", {
      memories: [{ content: "x1" }, { content: "x1" }, { content: "same words" }],
    });
    expect(batch).toMatchObject({ stored: 1, duplicates: 2 });
    expect(batch.ids[1]).toBe(batch.ids[0]);
    expect(batch.ids[2]).toBe(first.id);
    expect(await countItems(t.tenantId)).toBe(3);
  });

  it("does not dedupe conversation turns", async () => {
    const t = await newTenant();
    const a = await call(t.apiKey, "log_chat", { conversation_id: "c1", role: "user", content: "ok" });
    const b = await call(t.apiKey, "log_chat", { conversation_id: "c1", role: "user", content: "ok" });
    expect(a.message_id).not.toBe(b.message_id);
  });

  it("writes a batch all or nothing", async () => {
    const t = await newTenant();
    const bad = await callTool(t.apiKey, "memory_batch_store", {
      memories: [{ content: "fine" }, { content: "" }, { content: "also fine" }],
    });
    expect(bad.error).toMatchObject({ code: -32602, data: { details: { parameter: "memories.1.content" } } });
    const tooMany = await callTool(t.apiKey, "memory_batch_store", {
      memories: Array.from({ length: 101 }, (_, i) => ({ content: `m${i}` })),
    });
    expect(tooMany.error!.message).toBe("Invalid parameter 'memories': number of items must be at most 100 (got 101)");
    const tooLong = await callTool(t.apiKey, "memory_store", { content: "x".repeat(100_001) });
    expect(tooLong.error!.message).toBe("Invalid parameter 'content': length must be at most 100000 (got 100001)");
    expect(await countItems(t.tenantId)).toBe(0);
    const ok = await call(t.apiKey, "memory_batch_store", {
      memories: Array.from({ length: 100 }, (_, i) => ({ content: `memory number ${i}` })),
      namespace: "bulk",
    });
    expect(ok).toMatchObject({ stored: 100, duplicates: 0 });
    expect(await countItems(t.tenantId)).toBe(100);
  });

  it("splits long documents into ordered chunks within the embedder's limit", async () => {
    const t = await newTenant();
    const paragraphs = Array.from(
      { length: 40 },
      (_, i) => `Paragraph ${i} explains step ${i} of the migration in some detail, with enough words to matter.`,
    );
    const doc = await call(t.apiKey, "store_memory", { file_name: "guide.md", content: paragraphs.join("\n\n") });
    expect(doc.chunk_count).toBeGreaterThan(1);
    const { results } = await t.db
      .prepare("SELECT id, chunk_index, content, tokens FROM chunks WHERE item_id = ? ORDER BY chunk_index")
      .bind(doc.resource_id)
      .all<{ id: number; chunk_index: number; content: string; tokens: number }>();
    expect(results.map((r) => r.chunk_index)).toEqual(results.map((_, i) => i));
    expect(results.map((r) => r.id)).toEqual([...results.map((r) => r.id)].sort((a, b) => a - b));
    for (const r of results) expect(r.tokens).toBeLessThanOrEqual(350);
    expect(results[0]!.content.startsWith("Paragraph 0 ")).toBe(true);
    expect(
      results
        .at(-1)!
        .content.endsWith(
          "Paragraph 39 explains step 39 of the migration in some detail, with enough words to matter.",
        ),
    ).toBe(true);
    // every paragraph survives chunking
    for (const p of paragraphs) expect(results.some((r) => r.content.includes(p))).toBe(true);
  });

  it("orders conversation messages and keeps their timestamps", async () => {
    const t = await newTenant();
    for (let i = 0; i < 5; i++) {
      await call(t.apiKey, "log_chat", {
        conversation_id: "s1",
        role: i % 2 ? "assistant" : "user",
        content: `turn ${i} about gardening`,
        timestamp: `2023-05-0${i + 1}T10:00:00Z`,
      });
    }
    const { results } = await t.db
      .prepare(
        "SELECT position, created_at FROM items WHERE tenant_id = ? AND conversation_id = 's1' ORDER BY position",
      )
      .bind(t.tenantId)
      .all();
    expect(results.map((r) => r.position)).toEqual([0, 1, 2, 3, 4]);
    expect(results[0]!.created_at).toBe(Date.parse("2023-05-01T10:00:00Z"));
    const found = await call(t.apiKey, "search", {
      query: "gardening",
      session_id: "s1",
      after: "2023-05-03T00:00:00Z",
    });
    expect(found.results.map((r: any) => r.content).sort()).toEqual([
      "turn 2 about gardening",
      "turn 3 about gardening",
      "turn 4 about gardening",
    ]);
    expect(found.results[0]).toMatchObject({ session_id: "s1", project: "default" });
    const bad = await callTool(t.apiKey, "log_chat", {
      conversation_id: "s1",
      role: "user",
      content: "x",
      timestamp: "yesterday-ish",
    });
    expect(bad.error!.data.details.parameter).toBe("timestamp");
  });

  it("add_message answers seed 003's shape and maps importance", async () => {
    const t = await newTenant();
    const result = await call(t.apiKey, "add_message", {
      contextId: "ctx-1",
      message: "Ship on Friday",
      role: "user",
      importance: "HIGH",
      tags: ["plan"],
    });
    expect(result).toMatchObject({ success: true });
    const row = await t.db
      .prepare("SELECT importance, role, conversation_id, tags FROM items WHERE id = ?")
      .bind(result.messageId)
      .first();
    expect(row).toEqual({ importance: 0.75, role: "user", conversation_id: "ctx-1", tags: '["plan"]' });
  });
});

describe("search", () => {
  it("runs hybrid search after embedding, scoring keyword and vector parts", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", {
      memories: [
        { content: "The staging database runs Postgres 15 on a small instance." },
        { content: "Our team lunch is every Thursday at noon." },
        { content: "Production databases are backed up nightly to cold storage." },
      ],
    });
    await waitForEmbeddings(t.tenantId);
    const found = await call(t.apiKey, "search", { query: "nightly database backups", limit: 3 });
    expect(found.results[0].content).toContain("backed up nightly");
    expect(found.results[0].similarity).toBeGreaterThan(0);
    // "backups" is in no memory and "database" in two of three: a partial match, scored as one.
    expect(found.results[0].score).toBeGreaterThan(0);
    expect(found.results[0].score).toBeLessThan(0.5);
    expect(found.results.map((r: any) => r.content)).not.toContain("Our team lunch is every Thursday at noon.");
    const vectorOnly = await call(t.apiKey, "search", {
      query: "Production databases are backed up nightly",
      mode: "vector",
      limit: 3,
    });
    expect(vectorOnly.results[0].content).toContain("backed up nightly");
    expect(vectorOnly.results.map((r: any) => r.content)).not.toContain("Our team lunch is every Thursday at noon.");
  });

  it("finds a message by its speaker and by the turn it answers (context), ranking own words first unless asked when of its speaker", async () => {
    const t = await newTenant();
    await call(t.apiKey, "log_chat", {
      conversation_id: "run",
      role: "user",
      agent_name: "Melanie",
      content: "Did you finish the marathon in Berlin?",
    });
    const reply = await call(t.apiKey, "log_chat", {
      conversation_id: "run",
      role: "assistant",
      agent_name: "Caroline",
      content: "Yes, last Sunday! My legs still hurt.",
    });
    const bySpeaker = await call(t.apiKey, "search", { query: "Caroline", mode: "keyword" });
    expect(bySpeaker.results[0].item_id).toBe(reply.message_id);
    // The turn before it follows as its neighbour, with a share of its score (search-expansion.ts).
    expect(bySpeaker.results.slice(1).map((r: any) => r.content)).toEqual(["Did you finish the marathon in Berlin?"]);
    expect(bySpeaker.results[1].score).toBeLessThanOrEqual(0.3 * bySpeaker.results[0].score + 1e-4);
    const byTopic = await call(t.apiKey, "search", { query: "finish the Berlin marathon", mode: "keyword" });
    expect(byTopic.results.map((r: any) => r.content)).toEqual([
      "Did you finish the marathon in Berlin?",
      "Yes, last Sunday! My legs still hurt.",
    ]);
    // Asked when, of Caroline: her answer, which states a time, comes first (query-context.ts).
    const when = await call(t.apiKey, "search", {
      query: "When did Caroline finish the Berlin marathon?",
      mode: "keyword",
    });
    expect(when.results.map((r: any) => r.content)).toEqual([
      "Yes, last Sunday! My legs still hurt.",
      "Did you finish the marathon in Berlin?",
    ]);
    const row = await t.db
      .prepare("SELECT context FROM chunks WHERE item_id = ?")
      .bind(reply.message_id)
      .first<{ context: string }>();
    expect(row!.context).toBe("Caroline\nDid you finish the marathon in Berlin?");
    const doc = await call(t.apiKey, "store_memory", {
      file_name: "src/payments/refund.ts",
      content: "export function issue() {}",
      tags: ["billing"],
    });
    const byPath = await call(t.apiKey, "search", { query: "refund billing", mode: "keyword" });
    expect(byPath.results[0].item_id).toBe(doc.resource_id);
  });

  it("never lets user text break the FTS5 query", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", {
      content: 'He said "NEAR" and -minus (paren * star ^ caret 🙂 我喜欢猫 東京タワー',
    });
    const nasty = [
      '"',
      '""',
      "*",
      "NEAR(a b)",
      "a NEAR b",
      "-foo",
      "foo -bar",
      "(((",
      ")",
      "a AND",
      "OR",
      "NOT x",
      "col:value",
      "^start",
      "🙂🙂",
      "我喜欢",
      "猫",
      "タワー",
      "'; DROP TABLE items; --",
      "\u0000",
      "   x   ",
    ];
    for (const query of nasty) {
      const response = await callTool(t.apiKey, "search", { query, mode: "keyword" });
      expect(response.error, query).toBeUndefined();
    }
    expect((await call(t.apiKey, "search", { query: "猫", mode: "keyword" })).results).toHaveLength(1);
    expect((await call(t.apiKey, "search", { query: "喜欢", mode: "keyword" })).results).toHaveLength(1);
    expect((await call(t.apiKey, "search", { query: "東京", mode: "keyword" })).results).toHaveLength(1);
    expect((await call(t.apiKey, "search", { query: "NEAR", mode: "keyword" })).results).toHaveLength(1);
    expect(await countItems(t.tenantId)).toBe(1);
  });

  it("keeps tenants apart in keyword and vector search", async () => {
    const a = await newTenant();
    const b = await newTenant();
    await call(a.apiKey, "memory_store", { content: "Tenant A's launch codeword is heliotrope" });
    await call(b.apiKey, "memory_store", { content: "Tenant B likes plain toast" });
    await waitForEmbeddings(a.tenantId);
    await waitForEmbeddings(b.tenantId);
    for (const mode of ["keyword", "vector", "hybrid"]) {
      const found = await call(b.apiKey, "search", { query: "launch codeword heliotrope", mode, limit: 50 });
      expect(
        found.results.map((r: any) => r.content),
        mode,
      ).not.toContain("Tenant A's launch codeword is heliotrope");
    }
    expect((await call(b.apiKey, "get_similar_contexts", { query: "heliotrope" })).length).toBe(0);
  });

  it("limits a project-restricted key's searches to its projects", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "alpha roadmap item", namespace: "alpha" });
    await call(t.apiKey, "memory_store", { content: "beta roadmap item", namespace: "beta" });
    const key = await (await import("./helpers")).newKey(t.tenantId, { projects: ["alpha"] });
    const found = await call(key.apiKey, "search", { query: "roadmap", mode: "keyword" });
    expect(found.results.map((r: any) => r.project)).toEqual(["alpha"]);
  });

  it("filters by type, tag and stash tier", async () => {
    const t = await newTenant();
    await call(t.apiKey, "store_memory", {
      file_name: "retry.ts",
      content: "function retry() { try { return run() } catch (e) { backoff() } }",
      resource_type: "code",
    });
    await call(t.apiKey, "store_memory", {
      file_name: "notes.md",
      content: "Error handling notes: retry with backoff",
      tags: ["errors"],
    });
    const code = await call(t.apiKey, "retrieve_by_type", { query: "retry backoff", doc_type: "code" });
    expect(code).toMatchObject({ success: true, total_results: 1, query_type: "code" });
    expect(code.results[0]).toMatchObject({ resource_type: "code", metadata: { file_name: "retry.ts" } });
    expect(code.results[0].similarity_score).toBeGreaterThan(0);
    const tagged = await call(t.apiKey, "search", { query: "retry", tags: ["errors"] });
    expect(tagged.results).toHaveLength(1);
    await t.db.prepare("UPDATE items SET tier = 'stashed' WHERE tenant_id = ?").bind(t.tenantId).run();
    expect((await call(t.apiKey, "search", { query: "retry" })).results).toHaveLength(0);
    expect((await call(t.apiKey, "search", { query: "retry", include_stashed: true })).results).toHaveLength(2);
  });

  it("rejects bad input with the parameter and the limit", async () => {
    const t = await newTenant();
    expect((await callTool(t.apiKey, "search", { query: "   " })).error!.message).toBe(
      "Invalid parameter 'query': must not be empty",
    );
    expect((await callTool(t.apiKey, "search", { query: "x", limit: 0 })).error!.message).toBe(
      "Invalid parameter 'limit': value must be at least 1 (got 0)",
    );
    expect((await callTool(t.apiKey, "retrieve_by_type", { query: "x", doc_type: "spreadsheet" })).error).toMatchObject(
      {
        code: -32602,
        data: { details: { parameter: "doc_type" } },
      },
    );
    expect((await callTool(t.apiKey, "search", { query: "x", types: ["nope"] })).error!.data.details.parameter).toBe(
      "types.0",
    );
  });

  it("get_similar_contexts answers one entry per conversation", async () => {
    const t = await newTenant();
    await call(t.apiKey, "add_message", {
      contextId: "trip",
      message: "We should book the train to Lyon",
      role: "user",
    });
    await call(t.apiKey, "add_message", {
      contextId: "trip",
      message: "The train to Lyon leaves at nine",
      role: "assistant",
    });
    await call(t.apiKey, "add_message", { contextId: "cooking", message: "Add salt to the pasta water", role: "user" });
    await waitForEmbeddings(t.tenantId);
    const similar = await call(t.apiKey, "get_similar_contexts", { query: "train to Lyon", limit: 5 });
    expect(similar[0]).toEqual({ contextId: "trip", similarity: expect.any(Number) });
    expect(similar.filter((s: any) => s.contextId === "trip")).toHaveLength(1);
  });
});
