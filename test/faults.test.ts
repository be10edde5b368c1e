import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseFaults, withFault } from "../src/adapters/faults";
import worker from "../src/index";
import { call, newTenant, type TestTenant } from "./helpers";

// Dependencies failing, as configuration (FAULTS, src/adapters/faults.ts): requests go through the Worker's
// entry with FAULTS set for them alone, and what a user sees is checked.

/** A tool call through the Worker with FAULTS set; the tool's result (or the JSON-RPC error). */
async function callWith(faults: string, t: TestTenant, name: string, args: Record<string, unknown>) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request("http://localhost/jsonrpc", {
      method: "POST",
      headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    }),
    { ...env, FAULTS: faults },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return (await response.json()) as { result?: Record<string, any>; error?: { message: string; data?: { code: string } } };
}

describe("FAULTS", () => {
  it("parses targets and modes, and names a malformed entry", () => {
    expect([...parseFaults("embedder:down, kv:slow=200,vectors:error=0.25,queue:down-for=3")]).toEqual([
      ["embedder", { mode: "down" }],
      ["kv", { mode: "slow", ms: 200 }],
      ["vectors", { mode: "error", rate: 0.25 }],
      ["queue", { mode: "down-for", calls: 3 }],
    ]);
    expect(parseFaults(undefined).size).toBe(0);
    for (const bad of ["d1:down", "embedder", "embedder:error=2", "kv:down-for=0", "queue:sometimes"]) expect(() => parseFaults(bad)).toThrow(`FAULTS entry '${bad}'`);
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
    const stored = await callWith("embedder:down", t, "memory_store", { content: "The ferry to the island leaves at seven every morning.", namespace: "trips" });
    expect(stored.error).toBeUndefined();
    expect(stored.result).toBeDefined();

    const searched = await callWith("embedder:down", t, "search", { query: "When does the ferry leave?", project: "trips" });
    expect(searched.error).toBeUndefined();
    const found = searched.result as { results: { content: string }[]; degraded?: string };
    expect(found.results[0]?.content).toBe("The ferry to the island leaves at seven every morning.");
    expect(found.degraded).toMatch(/^keyword results only: semantic search is unavailable \(embedder unavailable/);

    const built = await callWith("embedder:down", t, "memory_context_build", { query: "When does the ferry to the island leave in the morning?", namespace: "trips", token_budget: 500 });
    const context = built.result as { memories: { content: string }[]; cache_hit: boolean; degraded?: string };
    expect(context.memories.map((m) => m.content)).toContain("The ferry to the island leaves at seven every morning.");
    expect(context.cache_hit).toBe(false);
    expect(context.degraded).toMatch(/^keyword matches only: semantic search is unavailable/);

    // Without the fault the same search has no flag.
    const healthy = await call<{ degraded?: string }>(t.apiKey, "search", { query: "When does the ferry leave?", project: "trips" });
    expect(healthy.degraded).toBeUndefined();
  });
});

describe("the vector index down", () => {
  it("search answers from keywords with the flag instead of failing", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "Invoices are archived in the blue cabinet.", namespace: "office" });
    const searched = await callWith("vectors:down", t, "search", { query: "Where are invoices archived?", project: "office" });
    const found = searched.result as { results: { content: string }[]; degraded?: string };
    expect(found.results[0]?.content).toBe("Invoices are archived in the blue cabinet.");
    expect(found.degraded).toContain("vectors unavailable");
  });
});

describe("KV down", () => {
  it("bypasses the cache: a cached context is rebuilt, never an error, and nothing stale is served", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "The office plants are watered on Mondays.", namespace: "office" });
    const request = { query: "When are the plants watered?", namespace: "office", token_budget: 400 };
    await call(t.apiKey, "memory_context_build", request);
    expect((await call<{ cache_hit: boolean }>(t.apiKey, "memory_context_build", request)).cache_hit).toBe(true);
    // Its index entry is current, so the lookup reads KV: failing, that is a miss and the context is built afresh.
    const rebuilt = await callWith("kv:down", t, "memory_context_build", request);
    expect(rebuilt.error).toBeUndefined();
    expect((rebuilt.result as { cache_hit: boolean; memories: { content: string }[] }).cache_hit).toBe(false);
    expect((rebuilt.result as { memories: { content: string }[] }).memories.map((m) => m.content)).toContain("The office plants are watered on Mondays.");
    // A new memory changes the answer; with KV down the cache is neither read nor able to serve the old one.
    await call(t.apiKey, "memory_store", { content: "Since June the office plants are watered on Thursdays.", namespace: "office" });
    const built = await callWith("kv:down", t, "memory_context_build", request);
    expect(built.error).toBeUndefined();
    const context = built.result as { memories: { content: string }[]; cache_hit: boolean };
    expect(context.cache_hit).toBe(false);
    expect(context.memories.map((m) => m.content)).toContain("Since June the office plants are watered on Thursdays.");
  });
});

describe("the job queue down", () => {
  it("acknowledges the write, which keyword search finds at once (the embed job is left to the sweep)", async () => {
    const t = await newTenant();
    const stored = await callWith("queue:down", t, "memory_store", { content: "The spare key hangs behind the kitchen door.", namespace: "home" });
    expect(stored.result).toBeDefined();
    const id = (stored.result as { id: string }).id;
    const found = await call<{ results: { item_id: string }[] }>(t.apiKey, "search", { query: "spare key", project: "home", mode: "keyword" });
    expect(found.results.map((r) => r.item_id)).toContain(id);
    const item = await call<{ history: { embedded_at: string | null } }>(t.apiKey, "memory_get", { id });
    expect(item.history.embedded_at).toBeNull(); // no job was queued: the sweep finds it (embedded_at IS NULL)
  });
});
