import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { parseFaults, withFault } from "../src/adapters/faults";
import { CACHE_VALUE_IN_D1 } from "../src/core/context/semantic-cache";
import { isTransientD1, toAppError } from "../src/errors";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import { callWith, fetchWith, type RpcAnswer } from "./fault-helpers";
import { ADMIN_TOKEN, call, newTenant, type TestTenant } from "./helpers";

// Dependencies failing, as configuration (FAULTS, src/adapters/faults.ts): requests go through the Worker's
// entry with FAULTS set for them alone, and what a user sees is checked.

const itemCount = async (t: TestTenant) =>
  (await t.db.prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?").bind(t.tenantId).first<{ n: number }>())!
    .n;

describe("FAULTS", () => {
  it("parses targets and modes, and names a malformed entry", () => {
    expect([...parseFaults("embedder:down, kv:slow=200,vectors:error=0.25,queue:down-for=3")]).toEqual([
      ["embedder", { mode: "down" }],
      ["kv", { mode: "slow", ms: 200 }],
      ["vectors", { mode: "error", rate: 0.25 }],
      ["queue", { mode: "down-for", calls: 3 }],
    ]);
    expect(parseFaults(undefined).size).toBe(0);
    for (const bad of ["control:down", "embedder", "embedder:error=2", "kv:down-for=0", "queue:sometimes"])
      expect(() => parseFaults(bad)).toThrow(`FAULTS entry '${bad}'`);
  });

  it("fails or slows an adapter's calls on the schedule, and leaves its other properties alone", async () => {
    const adapter = () => ({ size: 3, hello: async (name: string) => `hello ${name}` });
    const flaky = withFault(adapter(), "embedder", parseFaults("embedder:down-for=2"));
    expect(flaky.size).toBe(3);
    await expect(flaky.hello("a")).rejects.toThrow("embedder unavailable (injected fault: FAULTS)");
    await expect(flaky.hello("b")).rejects.toThrow("embedder unavailable");
    expect(await flaky.hello("c")).toBe("hello c"); // recovered after two calls
    await expect(withFault(adapter(), "kv", parseFaults("kv:error=1")).hello("x")).rejects.toThrow("kv unavailable");
    expect(await withFault(adapter(), "kv", parseFaults("kv:error=0")).hello("x")).toBe("hello x");
    const slow = withFault(adapter(), "vectors", parseFaults("vectors:slow=30"));
    const started = Date.now();
    expect(await slow.hello("y")).toBe("hello y");
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    const untouched = adapter();
    expect(withFault(untouched, "queue", parseFaults("embedder:down"))).toBe(untouched);
  });
});

describe("the embedder down", () => {
  it("writes succeed and are found by keyword at once; search and context building answer from keywords, saying so", async () => {
    const t = await newTenant();
    const stored = await callWith("embedder:down", t, "memory_store", {
      content: "The ferry to the island leaves at seven every morning.",
      namespace: "trips",
    });
    expect(stored.error).toBeUndefined();
    expect(stored.result).toBeDefined();

    const searched = await callWith("embedder:down", t, "search", {
      query: "When does the ferry leave?",
      project: "trips",
    });
    expect(searched.error).toBeUndefined();
    const found = searched.result as { results: { content: string }[]; degraded?: string };
    expect(found.results[0]?.content).toBe("The ferry to the island leaves at seven every morning.");
    expect(found.degraded).toMatch(/^keyword results only: semantic search is unavailable \(embedder unavailable/);

    const built = await callWith("embedder:down", t, "memory_context_build", {
      query: "When does the ferry to the island leave in the morning?",
      namespace: "trips",
      token_budget: 500,
    });
    const context = built.result as { memories: { content: string }[]; cache_hit: boolean; degraded?: string };
    expect(context.memories.map((m) => m.content)).toContain("The ferry to the island leaves at seven every morning.");
    expect(context.cache_hit).toBe(false);
    expect(context.degraded).toMatch(/^keyword matches only: semantic search is unavailable/);

    // Without the fault the same search has no flag.
    const healthy = await call<{ degraded?: string }>(t.apiKey, "search", {
      query: "When does the ferry leave?",
      project: "trips",
    });
    expect(healthy.degraded).toBeUndefined();
  });
});

describe("the vector index down", () => {
  it("search answers from keywords with the flag instead of failing", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", {
      content: "Invoices are archived in the blue cabinet.",
      namespace: "office",
    });
    const searched = await callWith("vectors:down", t, "search", {
      query: "Where are invoices archived?",
      project: "office",
    });
    const found = searched.result as { results: { content: string }[]; degraded?: string };
    expect(found.results[0]?.content).toBe("Invoices are archived in the blue cabinet.");
    expect(found.degraded).toContain("vectors unavailable");
  });
});

describe("KV down", () => {
  it("a context kept in D1 is still served; a write still makes it rebuilt, never stale", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "The office plants are watered on Mondays.", namespace: "office" });
    const request = { query: "When are the plants watered?", namespace: "office", token_budget: 400 };
    await call(t.apiKey, "memory_context_build", request);
    expect((await call<{ cache_hit: boolean }>(t.apiKey, "memory_context_build", request)).cache_hit).toBe(true);
    // Small contexts live in D1 (semantic-cache.ts): KV failing does not touch them.
    const served = await callWith("kv:down", t, "memory_context_build", request);
    expect(served.error).toBeUndefined();
    expect((served.result as { cache_hit: boolean }).cache_hit).toBe(true);
    // A new memory changes the answer: the cached one is never served again.
    await call(t.apiKey, "memory_store", {
      content: "Since June the office plants are watered on Thursdays.",
      namespace: "office",
    });
    const built = await callWith("kv:down", t, "memory_context_build", request);
    expect(built.error).toBeUndefined();
    const context = built.result as { memories: { content: string }[]; cache_hit: boolean };
    expect(context.cache_hit).toBe(false);
    expect(context.memories.map((m) => m.content)).toContain("Since June the office plants are watered on Thursdays.");
  });

  it("bypasses the cache for a context large enough for KV: rebuilt, never an error", async () => {
    const t = await newTenant();
    const long = (n: number) =>
      Array.from({ length: 1_500 }, (_, i) => `Greenhouse ${n} log line ${i}: the ferns were misted.`).join(" ");
    await call(t.apiKey, "memory_batch_store", {
      namespace: "greenhouse",
      memories: [{ content: long(1) }, { content: long(2) }],
    });
    const request = { query: "greenhouse ferns misted", namespace: "greenhouse", token_budget: 200_000 };
    const first = await call<{ memories: { content: string }[] }>(t.apiKey, "memory_context_build", request);
    expect(JSON.stringify(first).length).toBeGreaterThan(CACHE_VALUE_IN_D1);
    expect((await call<{ cache_hit: boolean }>(t.apiKey, "memory_context_build", request)).cache_hit).toBe(true);
    // Its index entry is current, so the lookup reads KV: failing, that is a miss and the context is built afresh.
    const rebuilt = await callWith("kv:down", t, "memory_context_build", request);
    expect(rebuilt.error).toBeUndefined();
    expect((rebuilt.result as { cache_hit: boolean }).cache_hit).toBe(false);
    expect((rebuilt.result as { memories: unknown[] }).memories).toHaveLength(2);
  });
});

describe("the job queue down", () => {
  it("acknowledges the write, which keyword search finds at once (the embed job is re-sent by the minute pass: recent-jobs.test.ts)", async () => {
    const t = await newTenant();
    const stored = await callWith("queue:down", t, "memory_store", {
      content: "The spare key hangs behind the kitchen door.",
      namespace: "home",
    });
    expect(stored.result).toBeDefined();
    const id = (stored.result as { id: string }).id;
    const found = await call<{ results: { item_id: string }[] }>(t.apiKey, "search", {
      query: "spare key",
      project: "home",
      mode: "keyword",
    });
    expect(found.results.map((r) => r.item_id)).toContain(id);
    const item = await call<{ history: { embedded_at: string | null } }>(t.apiKey, "memory_get", { id });
    expect(item.history.embedded_at).toBeNull(); // no job was queued: the minute pass finds it (embedded_at IS NULL)
  });
});

describe("D1 overloaded", () => {
  it("a tool call gets a retryable error with retry advice on both endpoints, and nothing is written", async () => {
    const t = await newTenant();
    const before = await itemCount(t);
    const rpc = await callWith("d1:down", t, "memory_store", { content: "The boiler is serviced every October." });
    expect(rpc.error?.code).toBe(-32000);
    expect(rpc.error?.message).toBe(
      "The database is overloaded or briefly unreachable; retry after 2 seconds (with backoff if it happens again).",
    );
    expect(rpc.error?.data).toEqual({
      code: "UNAVAILABLE",
      details: { retry_after_seconds: 2, reason: "database_unavailable" },
    });

    const mcp = await fetchWith("d1:down", "/mcp?toolsets=all", {
      headers: { authorization: `Bearer ${t.apiKey}`, accept: "application/json, text/event-stream" },
      body: {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: {
          name: "log_chat",
          arguments: { conversation_id: "c1", role: "user", content: "Book the boiler service." },
        },
      },
    });
    const text = await mcp.text();
    expect(mcp.status).toBe(200);
    expect(text).toContain('"isError":true');
    expect(text).toContain("retry after 2 seconds");

    // A JSON-RPC batch: every call answered, each with the retryable error; none written.
    const calls = ["first", "second", "third"].map((n, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "tools/call",
      params: { name: "memory_store", arguments: { content: `The ${n} note.` } },
    }));
    const batch = (await (
      await fetchWith("d1:down", "/jsonrpc", { headers: { authorization: `Bearer ${t.apiKey}` }, body: calls })
    ).json()) as RpcAnswer[];
    expect(batch.map((a) => a.error?.data?.code)).toEqual(["UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"]);
    expect(await itemCount(t)).toBe(before);

    // The same calls without the fault succeed: nothing half-written stood in their way.
    expect(
      (await callWith("", t, "memory_store", { content: "The boiler is serviced every October." })).result,
    ).toBeDefined();
    expect(await itemCount(t)).toBe(before + 1);
  });

  it("an admin route that reads a shard answers 503 with Retry-After", async () => {
    const t = await newTenant();
    const response = await fetchWith("d1:down", `/admin/tenants/${t.tenantId}/stats`, {
      method: "GET",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("2");
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("UNAVAILABLE");
  });

  it("a transient error fails its D1 batch whole: a batch store of 3 while D1 fails is all or nothing", async () => {
    const t = await newTenant();
    const memories = ["one", "two", "three"].map((n) => ({ content: `Shelf ${n} holds the winter tyres.` }));
    const before = await itemCount(t);
    let stored = 0;
    let refused = 0;
    // error=0.5: a call fails at its read or at its write batch, or succeeds; it never writes a part.
    for (let i = 0; i < 8; i++) {
      const answer = await callWith("d1:error=0.5", t, "memory_batch_store", {
        memories: memories.map((m) => ({ content: `${m.content} (${i})` })),
      });
      if (answer.error) {
        expect(answer.error.data?.code).toBe("UNAVAILABLE");
        refused++;
      } else stored += 3;
      expect(await itemCount(t)).toBe(before + stored);
    }
    const orphans = await t.db
      .prepare(
        "SELECT COUNT(*) AS n FROM items i WHERE tenant_id = ? AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.item_id = i.id)",
      )
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(orphans!.n).toBe(0);
    expect(refused).toBeGreaterThan(0); // 8 calls at 1/2 per query: all succeeding is under 1 in 10,000
  });
});

describe("D1's transient errors", () => {
  it("are told from the rest by D1's own messages (its error list's 'retry' rows)", () => {
    const transient = [
      "D1_ERROR: D1 DB is overloaded. Too many requests queued.",
      "D1_ERROR: D1 DB is overloaded. Requests queued for too long.",
      "D1_ERROR: Network connection lost.",
      "D1_ERROR: Internal error in D1 DB storage caused object to be reset.",
      "D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset.",
      "D1_ERROR: D1 DB's isolate exceeded its memory limit and was reset.",
      "D1_ERROR: D1 DB exceeded its CPU time limit and was reset.",
      "D1_ERROR: D1 DB reset because its code was updated.",
      "D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.",
    ];
    for (const message of transient) {
      expect(isTransientD1(new Error(message)), message).toBe(true);
      expect(toAppError(new Error(message)).details).toEqual({
        retry_after_seconds: 2,
        reason: "database_unavailable",
      });
    }
    for (const message of [
      "D1_ERROR: UNIQUE constraint failed: items.id: SQLITE_CONSTRAINT",
      "D1_ERROR: Exceeded maximum DB size",
      "D1_ERROR: no such table: nope: SQLITE_ERROR",
    ]) {
      expect(isTransientD1(new Error(message)), message).toBe(false);
      expect(toAppError(new Error(message)).code).toBe("INTERNAL_ERROR");
    }
  });

  it("make a job retry with backoff, and the retry after recovery does the work", async () => {
    const t = await newTenant();
    const { id } = await callWith("queue:down", t, "memory_store", {
      content: "The attic ladder is stored in the garage.",
    }).then((a) => a.result as { id: string });
    const deliver = async (faults: string, attempts: number) => {
      const batch = createMessageBatch<JobMessage>("context-edge-jobs", [
        {
          id: `m${attempts}`,
          timestamp: new Date(),
          attempts,
          body: { type: "embed", tenantId: t.tenantId, itemIds: [id] },
        },
      ]);
      const retry = vi.spyOn(batch.messages[0]!, "retry");
      const ctx = createExecutionContext();
      await worker.queue(batch, { ...env, FAULTS: faults }, ctx);
      await waitOnExecutionContext(ctx);
      return { ...(await getQueueResult(batch, ctx)), retryOptions: retry.mock.calls.map((c) => c[0]) };
    };
    const failed = await deliver("d1:down", 1);
    expect(failed.explicitAcks).toEqual([]);
    expect(failed.retryOptions).toEqual([{ delaySeconds: 2 }]); // backoffSeconds(1): 2, 4, 8, ... up to 5 minutes
    const embeddedAt = () =>
      t.db
        .prepare("SELECT embedded_at FROM items WHERE tenant_id = ? AND id = ?")
        .bind(t.tenantId, id)
        .first<{ embedded_at: number | null }>("embedded_at");
    expect(await embeddedAt()).toBeNull();
    const recovered = await deliver("", 2);
    expect(recovered.explicitAcks).toEqual(["m2"]);
    expect(await embeddedAt()).not.toBeNull();
  });
});
