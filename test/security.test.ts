import { describe, expect, it } from "vitest";
import { toolCallCharger } from "../src/auth/middleware";
import {
  admin,
  call,
  callTool,
  insideOneRateWindow,
  jsonrpc,
  newKey,
  newTenant,
  type RpcResponse,
  tenantDb,
} from "./helpers";

/** Regression tests for issue 9's defects, each through the real HTTP routes. */

const rows = async (tenantId: string) => {
  const db = await tenantDb(tenantId);
  const [items, conversations] = await db.batch<{ n: number }>([
    db.prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?").bind(tenantId),
    db.prepare("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ?").bind(tenantId),
  ]);
  return { items: items!.results[0]!.n, conversations: conversations!.results[0]!.n };
};

describe("times outside the Date range", () => {
  it("are refused before anything is written, naming the parameter and the range", async () => {
    const t = await newTenant();
    for (const timestamp of [1e308, -1e308, 8.64e15 + 1, "not a date"]) {
      const answer = await callTool(t.apiKey, "log_chat", {
        conversation_id: "c1",
        role: "user",
        content: "x",
        project_id: "p",
        timestamp,
      });
      expect(answer.error?.code, String(timestamp)).toBe(-32602);
      expect(answer.error?.message).toContain("Invalid parameter 'timestamp'");
      expect(answer.error?.message).toContain("8640000000000000");
    }
    const usage = await callTool(t.apiKey, "context_analyze_usage", {
      project_id: "p",
      context_descriptors: { recent_messages: [{ content: "ok", timestamp: 1e308 }] },
    });
    expect(usage.error?.code).toBe(-32602);
    expect(usage.error?.message).toContain("recent_messages.0.timestamp");
    const stash = await callTool(t.apiKey, "context_stash", { project_id: "p", filters: { created_after: -1e308 } });
    expect(stash.error?.code).toBe(-32602);
    expect(await rows(t.tenantId)).toEqual({ items: 0, conversations: 0 });
    expect((await call(t.apiKey, "search", { query: "x", project: "p" })).results).toEqual([]);
  });

  it("accepts both ends of the range, and reads stay sound whatever a row holds", async () => {
    const t = await newTenant();
    await call(t.apiKey, "log_chat", {
      conversation_id: "c1",
      role: "user",
      content: "the oldest tale",
      project_id: "p",
      timestamp: -8.64e15,
    });
    await call(t.apiKey, "memory_store", { content: "a poisoned clock", namespace: "p" });
    // A value no write path accepts any more, as an older deployment could have stored it.
    await t.db
      .prepare(
        "UPDATE items SET created_at = 1e308, touched_at = 1e308 WHERE tenant_id = ? AND content = 'a poisoned clock'",
      )
      .bind(t.tenantId)
      .run();
    const found = await call(t.apiKey, "search", { query: "poisoned clock tale", project: "p" });
    expect(found.results.map((r: any) => r.content).sort()).toEqual(["a poisoned clock", "the oldest tale"]);
    expect(found.results.find((r: any) => r.content === "the oldest tale").timestamp).toBe(
      "-271821-04-20T00:00:00.000Z",
    );
    const working = await call(t.apiKey, "context_get_working_set", { project_id: "p" });
    expect(working.segments.length).toBe(2);
  });
});

describe("project-limited keys", () => {
  it("cannot add a message to another project's conversation (CONFLICT, nothing written)", async () => {
    const t = await newTenant();
    await call(t.apiKey, "log_chat", { conversation_id: "secret", role: "user", content: "p2 only", project_id: "p2" });
    const p1 = await newKey(t.tenantId, { projects: ["p1"] });
    const before = await rows(t.tenantId);
    const answer = await callTool(p1.apiKey, "log_chat", {
      conversation_id: "secret",
      role: "user",
      content: "injected",
      project_id: "p1",
    });
    expect(answer.error?.data?.code).toBe("CONFLICT");
    const added = await callTool(p1.apiKey, "add_message", { contextId: "secret", message: "injected", role: "user" });
    expect(added.error?.data?.code).toBe("PERMISSION_DENIED");
    expect(await rows(t.tenantId)).toEqual(before);
    // The unrestricted key, too, keeps a conversation in its project.
    expect(
      (
        await callTool(t.apiKey, "log_chat", {
          conversation_id: "secret",
          role: "user",
          content: "moved?",
          project_id: "p3",
        })
      ).error?.data?.code,
    ).toBe("CONFLICT");
    expect(
      (await call(t.apiKey, "add_message", { contextId: "secret", message: "joins p2", role: "user" })).success,
    ).toBe(true);
  });

  it("read nothing of another project by id", async () => {
    const t = await newTenant();
    await call(t.apiKey, "log_chat", {
      conversation_id: "c2",
      role: "user",
      content: "zanzibar plans for p2",
      project_id: "p2",
    });
    const doc = await call(t.apiKey, "store_memory", {
      file_name: "p2.md",
      content: "zanzibar document of p2",
      project_id: "p2",
    });
    const hit = (await call(t.apiKey, "search", { query: "zanzibar", project: "p2" })).results[0];
    const p1 = await newKey(t.tenantId, { projects: ["p1"] });
    expect((await callTool(p1.apiKey, "get_context", { chunk_id: hit.chunk_id })).error?.data?.code).toBe("NOT_FOUND");
    expect((await callTool(p1.apiKey, "retrieve_context", { contextId: "c2" })).error?.data?.code).toBe("NOT_FOUND");
    expect(
      (await callTool(p1.apiKey, "get_document_relationships", { document_id: doc.resource_id })).error?.data?.code,
    ).toBe("NOT_FOUND");
    expect((await call(p1.apiKey, "search", { query: "zanzibar" })).results).toEqual([]);
  });
});

describe("an admin key limited to projects", () => {
  it("creates and revokes only keys within its own scopes and projects", async () => {
    const t = await newTenant();
    const limited = await newKey(t.tenantId, { scopes: ["read", "write", "admin"], projects: ["p1"] });
    const create = (body: unknown) => admin("POST", `/tenants/${t.tenantId}/keys`, body, limited.apiKey);
    expect((await create({ scopes: ["read", "write", "admin"], projects: null })).status).toBe(403);
    expect((await create({ scopes: ["read"], projects: ["p1", "p2"] })).status).toBe(403);
    expect((await create({ scopes: ["read"] })).status).toBe(403); // projects default to all
    expect((await create({ scopes: ["read", "write"], projects: ["p1"] })).status).toBe(201);
    const reader = await newKey(t.tenantId, { scopes: ["read"], projects: ["p1"] });
    const wide = await newKey(t.tenantId, { scopes: ["read"] });
    expect((await admin("DELETE", `/keys/${wide.keyId}`, undefined, limited.apiKey)).status).toBe(403);
    expect((await admin("DELETE", `/keys/${reader.keyId}`, undefined, limited.apiKey)).status).toBe(200);
    const listed = await (await admin("GET", `/tenants/${t.tenantId}/keys`, undefined, limited.apiKey)).json<{
      keys: { key_id: string }[];
    }>();
    expect(listed.keys.map((k) => k.key_id)).not.toContain(wide.keyId);
    expect((await admin("GET", `/tenants/${t.tenantId}/stats`, undefined, limited.apiKey)).status).toBe(403);
  });
});

describe("D1's 100 bound parameters", () => {
  it("are never reached by a key with 100 projects or by long lists", async () => {
    const t = await newTenant();
    const projects = Array.from({ length: 100 }, (_, i) => `proj-${i}`);
    for (let i = 0; i < 3; i++)
      await call(t.apiKey, "store_memory", {
        file_name: `f${i}.md`,
        content: `alpine lake notes ${i}`,
        project_id: projects[i],
      });
    const many = await newKey(t.tenantId, { projects });
    const found = await call(many.apiKey, "search", { query: "alpine lake", limit: 50 });
    expect(found.results.length).toBe(3);
    expect(
      (await call(many.apiKey, "memory_context_build", { query: "alpine lake", token_budget: 500 })).memory_count,
    ).toBe(3);
    expect(
      (await call(many.apiKey, "retrieve_by_type", { query: "alpine lake", doc_type: "document" })).results.length,
    ).toBe(3);
    expect((await callTool(many.apiKey, "visualize_context", {})).error).toBeUndefined();
    const graph = await call(many.apiKey, "query_graph", {
      query: "alpine",
      relationship_types: [
        "related_to",
        "depends_on",
        "references",
        "implements",
        "extends",
        "part_of",
        "similar_content",
        "supersedes",
        "contradicts",
        "derived_from",
        "example_of",
      ],
    });
    expect(graph.success).toBe(true);
  });
});

describe("text that is not well-formed Unicode", () => {
  it("is refused with the parameter named, and the namespace keeps working", async () => {
    const t = await newTenant();
    const bad = await callTool(t.apiKey, "memory_store", { content: "broken \ud800 half", namespace: "n" });
    expect(bad.error?.code).toBe(-32602);
    expect(bad.error?.message).toBe(
      "Invalid parameter 'content': text is not well-formed Unicode (it holds a lone surrogate)",
    );
    const nested = await callTool(t.apiKey, "memory_batch_store", {
      memories: [{ content: "fine" }, { content: "ok", tags: ["\udc00"] }],
    });
    expect(nested.error?.data?.details?.parameter).toBe("memories.1.tags.0");
    const emoji = await call(t.apiKey, "memory_store", { content: "paired 😀 is fine", namespace: "n" });
    expect((await call(t.apiKey, "memory_store", { content: "paired 😀 is fine", namespace: "n" })).duplicate_of).toBe(
      emoji.id,
    );
    expect(await rows(t.tenantId)).toEqual({ items: 1, conversations: 0 });
  });
});

describe("concurrent identical writes", () => {
  it("all succeed; exactly one item is stored and the others name it", async () => {
    const t = await newTenant();
    const keys = await Promise.all(Array.from({ length: 4 }, () => newKey(t.tenantId)));
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(keys[i % 4]!.apiKey, "memory_store", { content: "one fact, written at once by many", namespace: "race" }),
      ),
    );
    const ids = new Set(answers.map((a) => a.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.duplicate === false).length).toBe(1);
    expect(answers.filter((a) => a.duplicate_of === [...ids][0]).length).toBe(19);
    expect((await rows(t.tenantId)).items).toBe(1);
  });
});

describe("the rate limit", () => {
  // The test binding allows 40 a minute (vitest.config.ts).
  const pings = (n: number) =>
    Array.from({ length: n }, (_, id) => ({
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "ping", arguments: {} },
      id,
    }));
  const limitedIn = (answers: RpcResponse[]) => answers.filter((a) => a.error?.code === -32029);

  it("counts tool calls, not requests: a batch spends one unit per call", async () => {
    const t = await newTenant();
    await insideOneRateWindow();
    expect(limitedIn(await (await jsonrpc(t.apiKey, pings(39))).json<RpcResponse[]>())).toEqual([]);
    // 39 of 40 spent: the next request is admitted and pays its first call, which spends the 40th; its other 49 are refused.
    const answers = await (await jsonrpc(t.apiKey, pings(50))).json<RpcResponse[]>();
    const limited = limitedIn(answers);
    expect(answers.length).toBe(50);
    expect(limited.map((a) => a.id)).toEqual(answers.slice(1).map((a) => a.id));
    expect(limited[0]!.error!.data.code).toBe("RATE_LIMITED");
    expect((await jsonrpc(t.apiKey, pings(1)[0])).status).toBe(429);
  });

  it("admits a batch while the key is under its limit, and the batch's calls count against the next request", async () => {
    const t = await newTenant();
    await insideOneRateWindow();
    expect(limitedIn(await (await jsonrpc(t.apiKey, pings(50))).json<RpcResponse[]>())).toEqual([]);
    const next = await jsonrpc(t.apiKey, pings(1)[0]);
    expect(next.status).toBe(429);
    expect(next.headers.get("retry-after")).toBe("60");
  });

  it("charges a batch's calls in one limiter call, whose delta is their number", async () => {
    const charged: RateLimitOptions[] = [];
    const limiter: RateLimit = { limit: async (options) => (charged.push(options), { success: true }) };
    const charger = toolCallCharger(limiter, "key-1");
    charger.reserve(50);
    expect(await Promise.all(Array.from({ length: 50 }, () => charger.charge()))).toEqual(Array(50).fill(true));
    expect(charged).toEqual([{ key: "key-1", delta: 49 }]);
    // A call past the batch's reservation pays for itself.
    await charger.charge();
    expect(charged.at(-1)).toEqual({ key: "key-1" });
  });
});

describe("the semantic cache", () => {
  it("keeps working for a long non-ASCII namespace (KV keys are at most 512 bytes)", async () => {
    const t = await newTenant();
    const namespace = "名前空間".repeat(50); // 200 letters, 600 bytes of UTF-8
    await call(t.apiKey, "memory_store", { content: "cache me please", namespace });
    const args = { query: "cache me", token_budget: 200, namespace };
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(false);
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(true);
  });
});

describe("memory_cache_clear patterns", () => {
  it("take the schema's 200 characters (D1's GLOB stops at 50 bytes) and match in linear time", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "billing runs nightly", namespace: "ops" });
    await call(t.apiKey, "memory_context_build", {
      query: "when does billing run",
      token_budget: 200,
      namespace: "ops",
    });
    expect(await call(t.apiKey, "memory_cache_clear", { pattern: `${"*".repeat(199)}x` })).toEqual({
      cleared: true,
      entries_removed: 0,
    });
    expect(await call(t.apiKey, "memory_cache_clear", { pattern: "WHEN does*" })).toEqual({
      cleared: true,
      entries_removed: 1,
    });
  });

  it("globMatches: * and ? over whole strings, no exponential backtracking", async () => {
    const { globMatches } = await import("../src/core/context/semantic-cache");
    const m = (p: string, t: string) => globMatches([...p], [...t]);
    expect([m("a*c", "abbc"), m("a?c", "abc"), m("*", ""), m("名*", "名前"), m("a*c", "abcd"), m("?", "")]).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
    const started = Date.now();
    expect(m(`${"*a".repeat(100)}b`, "a".repeat(1000))).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
