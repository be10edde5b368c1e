import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardDatabase } from "../src/control/shards";
import { deleteExpiredKeys, EXPIRED_KEYS_PER_STATEMENT, IDEMPOTENCY_WINDOW_MS } from "../src/core/memory/idempotency";
import worker from "../src/index";
import { callWith } from "./fault-helpers";
import { call, callTool, jsonrpc, mcpPost, newTenant, type TestTenant } from "./helpers";

// A client's retry with idempotency_key stores once (memory_ingest, log_chat), through /jsonrpc and /mcp: a repeat
// answers the first call's ids and writes nothing; the same key for another call is a CONFLICT; an expired key
// writes again; concurrent calls with one key store once; the sweep deletes expired keys in bounded statements.

const TURNS = [
  { role: "user", content: "We moved the standup to nine thirty." },
  { role: "assistant", content: "Noted: standup at 9:30 from Monday." },
];

/** Rows a tenant has in the tables a write touches: a repeat must leave every count as it was. */
async function rowCounts(t: TestTenant): Promise<Record<string, number>> {
  const count = async (sql: string) => (await t.db.prepare(sql).bind(t.tenantId).first<{ n: number }>())!.n;
  return {
    items: await count("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?"),
    chunks: await count("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ?"),
    messages: await count("SELECT COALESCE(SUM(message_count), 0) AS n FROM conversations WHERE tenant_id = ?"),
    keys: await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE tenant_id = ?"),
  };
}

/** tools/call over /mcp (no session): the tool's structured result, or its error as the text of an isError result. */
async function mcpCall(t: TestTenant, name: string, args: Record<string, unknown>): Promise<Record<string, any>> {
  const response = await mcpPost(
    t.apiKey,
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
    { query: "?toolsets=all", accept: "application/json" },
  );
  const { result } = await response.json<{ result: { isError?: boolean; structuredContent?: any; content: any[] } }>();
  return result.isError ? JSON.parse(result.content[0].text) : result.structuredContent;
}

/** Moves a key's stored call back past the window, as if a day had gone by. */
async function expire(t: TestTenant, key: string): Promise<void> {
  await t.db
    .prepare("UPDATE idempotency_keys SET created_at = created_at - ? WHERE tenant_id = ? AND key = ?")
    .bind(IDEMPOTENCY_WINDOW_MS, t.tenantId, key)
    .run();
}

describe("idempotency_key: a repeat answers the first call and stores nothing", () => {
  it("memory_ingest over /jsonrpc and /mcp answers the same ids, whatever order the arguments come in", async () => {
    const t = await newTenant();
    const args = { conversation_id: "standup", project_id: "team", messages: TURNS, idempotency_key: "ingest-1" };
    const first = await call(t.apiKey, "memory_ingest", args);
    expect(first.ids).toHaveLength(2);
    const stored = await rowCounts(t);
    expect(stored).toEqual({ items: 2, chunks: 2, messages: 2, keys: 1 });

    expect(await call(t.apiKey, "memory_ingest", args)).toEqual(first);
    expect(await mcpCall(t, "memory_ingest", args)).toEqual(first);
    const reordered = { idempotency_key: "ingest-1", messages: TURNS, project_id: "team", conversation_id: "standup" };
    expect(await call(t.apiKey, "memory_ingest", reordered)).toEqual(first);
    expect(await rowCounts(t)).toEqual(stored);
    // Without a key the same call is a new one: it stores the turns again.
    const unkeyed = await call(t.apiKey, "memory_ingest", { ...args, idempotency_key: undefined });
    expect(unkeyed.ids).not.toEqual(first.ids);
    expect((await rowCounts(t)).items).toBe(4);
  });

  it("log_chat answers the first message's id, tokens and timestamp; metadata's key order does not matter", async () => {
    const t = await newTenant();
    const args = {
      conversation_id: "c",
      role: "user",
      content: "Please book the review room for Thursday.",
      metadata: { channel: "slack", thread: 7 },
      idempotency_key: "chat-1",
    };
    const first = await call(t.apiKey, "log_chat", args);
    const stored = await rowCounts(t);
    expect(stored).toEqual({ items: 1, chunks: 1, messages: 1, keys: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5)); // a new write would stamp a later time
    expect(await call(t.apiKey, "log_chat", { ...args, metadata: { thread: 7, channel: "slack" } })).toEqual(first);
    expect(await mcpCall(t, "log_chat", args)).toEqual(first);
    expect(await rowCounts(t)).toEqual(stored);
  });

  it("a JSON-RPC batch of log_chat: keyed calls stored before answer their ids, a key repeated in the batch stores once", async () => {
    const t = await newTenant();
    const turn = (n: number, key?: string) => ({
      conversation_id: "b",
      role: "user",
      content: `turn ${n} of the batch`,
      ...(key ? { idempotency_key: key } : {}),
    });
    const earlier = await call(t.apiKey, "log_chat", turn(0, "b-0"));
    const calls = [turn(0, "b-0"), turn(1, "b-1"), turn(2), turn(1, "b-1"), turn(3, "b-3")];
    const batch = calls.map((args, id) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "log_chat", arguments: args },
    }));
    const answers = await (await jsonrpc(t.apiKey, batch)).json<{ id: number; result: any; error?: unknown }[]>();
    const byId = answers.sort((a, b) => a.id - b.id);
    expect(byId.map((a) => a.error)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(byId[0]!.result).toEqual(earlier);
    expect(byId[3]!.result).toEqual(byId[1]!.result);
    expect(new Set(byId.map((a) => a.result.message_id)).size).toBe(4);
    expect(await rowCounts(t)).toEqual({ items: 4, chunks: 4, messages: 4, keys: 3 });
    // The batch again: every keyed call answers as before; only the unkeyed one stores anew.
    const again = (await (await jsonrpc(t.apiKey, batch)).json<{ id: number; result: any }[]>()).sort(
      (a, b) => a.id - b.id,
    );
    for (const i of [0, 1, 3, 4]) expect(again[i]!.result).toEqual(byId[i]!.result);
    expect(again[2]!.result.message_id).not.toBe(byId[2]!.result.message_id);
    expect(await rowCounts(t)).toEqual({ items: 5, chunks: 5, messages: 5, keys: 3 });
  });
  it("a key is any text: keys that differ only after a NUL or in case are two keys", async () => {
    const t = await newTenant();
    const keys = ["x\u0000y", "x\u0000z", "Key-é🙂", "key-é🙂"];
    const answers = [];
    for (const [i, key] of keys.entries())
      answers.push(
        await call(t.apiKey, "log_chat", {
          conversation_id: "k",
          role: "user",
          content: `turn ${i}`,
          idempotency_key: key,
        }),
      );
    expect(new Set(answers.map((a) => a.message_id)).size).toBe(4);
    for (const [i, key] of keys.entries())
      expect(
        await call(t.apiKey, "log_chat", {
          conversation_id: "k",
          role: "user",
          content: `turn ${i}`,
          idempotency_key: key,
        }),
      ).toEqual(answers[i]);
    expect(await rowCounts(t)).toEqual({ items: 4, chunks: 4, messages: 4, keys: 4 });
  });
});

describe("idempotency_key: refusals", () => {
  it("the same key for other arguments or another tool is a CONFLICT that names the key, and stores nothing", async () => {
    const t = await newTenant();
    const args = { conversation_id: "c", role: "user", content: "The invoice is due Friday.", idempotency_key: "k-9" };
    await call(t.apiKey, "log_chat", args);
    const stored = await rowCounts(t);
    const conflicts = [
      await callTool(t.apiKey, "log_chat", { ...args, content: "The invoice is due Monday." }),
      await callTool(t.apiKey, "log_chat", { ...args, project_id: "elsewhere" }),
      await callTool(t.apiKey, "memory_ingest", { conversation_id: "c", messages: TURNS, idempotency_key: "k-9" }),
    ];
    for (const response of conflicts) {
      expect(response.error?.data).toMatchObject({
        code: "CONFLICT",
        details: { parameter: "idempotency_key", idempotency_key: "k-9" },
      });
      expect(response.error?.message).toContain("idempotency_key 'k-9'");
    }
    const overMcp = await mcpCall(t, "log_chat", { ...args, role: "assistant" });
    expect(overMcp.error).toMatchObject({ code: "CONFLICT", details: { idempotency_key: "k-9" } });
    expect(await rowCounts(t)).toEqual(stored);
  });

  it("a key over 200 characters is INVALID_PARAMETER naming idempotency_key and the limit; nothing is stored", async () => {
    const t = await newTenant();
    for (const [tool, args] of [
      ["log_chat", { conversation_id: "c", role: "user", content: "hello" }],
      ["memory_ingest", { conversation_id: "c", messages: TURNS }],
    ] as const) {
      const response = await callTool(t.apiKey, tool, { ...args, idempotency_key: "k".repeat(201) });
      expect(response.error?.data).toMatchObject({
        code: "INVALID_PARAMETER",
        details: { parameter: "idempotency_key" },
      });
      expect(response.error?.message).toBe("Invalid parameter 'idempotency_key': length must be at most 200 (got 201)");
      const empty = await callTool(t.apiKey, tool, { ...args, idempotency_key: "" });
      expect(empty.error?.data).toMatchObject({ code: "INVALID_PARAMETER", details: { parameter: "idempotency_key" } });
    }
    expect(await rowCounts(t)).toEqual({ items: 0, chunks: 0, messages: 0, keys: 0 });
    // 200 characters is a key like any other.
    const longest = { conversation_id: "c", role: "user", content: "hello", idempotency_key: "k".repeat(200) };
    expect(await call(t.apiKey, "log_chat", longest)).toEqual(await call(t.apiKey, "log_chat", longest));
    expect(await rowCounts(t)).toEqual({ items: 1, chunks: 1, messages: 1, keys: 1 });
  });
});

describe("idempotency_key: time and concurrency", () => {
  it("a key older than 24 hours no longer counts: the call stores again and the key names the new call", async () => {
    const t = await newTenant();
    const args = { conversation_id: "old", messages: TURNS, idempotency_key: "yesterday" };
    const first = await call(t.apiKey, "memory_ingest", args);
    await expire(t, "yesterday");
    const second = await call(t.apiKey, "memory_ingest", args);
    expect(second.ids).toHaveLength(2);
    expect(second.ids).not.toEqual(first.ids);
    expect(await rowCounts(t)).toEqual({ items: 4, chunks: 4, messages: 4, keys: 1 });
    expect(await call(t.apiKey, "memory_ingest", args)).toEqual(second);
    // Expired, the key is free for another call too.
    await expire(t, "yesterday");
    const other = { conversation_id: "old", role: "user", content: "A new day.", idempotency_key: "yesterday" };
    expect((await callTool(t.apiKey, "log_chat", other)).error).toBeUndefined();
  });

  it("concurrent calls with one key store once and all answer the stored ids; other content loses with CONFLICT", async () => {
    const t = await newTenant();
    // Slowed D1: every call reads the key before any writes it, so all but one lose the race on the primary key.
    const ingest = { conversation_id: "race", messages: TURNS, idempotency_key: "race-1" };
    const ingests = await Promise.all(
      Array.from({ length: 4 }, () => callWith("d1:slow=40", t, "memory_ingest", ingest)),
    );
    expect(ingests.map((a) => a.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(new Set(ingests.map((a) => JSON.stringify(a.result))).size).toBe(1);
    expect(await rowCounts(t)).toEqual({ items: 2, chunks: 2, messages: 2, keys: 1 });

    const chat = (content: string) => ({ conversation_id: "race", role: "user", content, idempotency_key: "race-2" });
    const chats = await Promise.all([
      callWith("d1:slow=40", t, "log_chat", chat("same words")),
      callWith("d1:slow=40", t, "log_chat", chat("same words")),
      callWith("d1:slow=40", t, "log_chat", chat("other words")),
    ]);
    const won = chats.filter((a) => a.result !== undefined);
    const refused = chats.filter((a) => a.error !== undefined);
    expect(won.length + refused.length).toBe(3);
    for (const a of refused) expect(a.error?.data?.code).toBe("CONFLICT");
    expect(new Set(won.map((a) => a.result!.message_id)).size).toBe(1);
    expect(await rowCounts(t)).toEqual({ items: 3, chunks: 3, messages: 3, keys: 2 });
  });
});

describe("expired keys", () => {
  const shard = () => shardDatabase(env, "SHARD_0");
  const keyRows = (tenant: string, count: number, createdAt: number) =>
    shard()
      .prepare(
        `INSERT INTO idempotency_keys (tenant_id, key, request_hash, response, created_at)
         SELECT ?1, 'k' || value, 'h', '{"project":"p","result":null}', ?2 FROM json_each(?3)`,
      )
      .bind(tenant, createdAt, JSON.stringify(Array.from({ length: count }, (_, i) => i)));
  const left = async (tenant: string) =>
    (await shard()
      .prepare("SELECT COUNT(*) AS n FROM idempotency_keys WHERE tenant_id = ?")
      .bind(tenant)
      .first<{ n: number }>())!.n;

  it("the 15-minute sweep deletes keys past the window and keeps the rest, a frozen tenant's until its move ends", async () => {
    const now = Date.now();
    await shard().batch([
      keyRows("tn_sweep_old", 3, now - IDEMPOTENCY_WINDOW_MS - 1),
      keyRows("tn_sweep_new", 2, now - IDEMPOTENCY_WINDOW_MS + 60_000),
      keyRows("tn_sweep_frozen", 2, now - IDEMPOTENCY_WINDOW_MS - 1),
      shard()
        .prepare("INSERT INTO tenant_fences (tenant_id, state, since) VALUES ('tn_sweep_frozen', 'frozen', ?)")
        .bind(now),
    ]);
    const sweep = async () => {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ cron: "*/15 * * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    };
    await sweep();
    expect([await left("tn_sweep_old"), await left("tn_sweep_new"), await left("tn_sweep_frozen")]).toEqual([0, 2, 2]);
    await shard().prepare("DELETE FROM tenant_fences WHERE tenant_id = 'tn_sweep_frozen'").run();
    await sweep();
    expect([await left("tn_sweep_new"), await left("tn_sweep_frozen")]).toEqual([2, 0]);
  });

  it("deletes in bounded statements, oldest first, and reads one index entry when nothing has expired", async () => {
    const now = Date.now();
    const extra = 500;
    await shard().batch([
      keyRows("tn_bounded", 2 * EXPIRED_KEYS_PER_STATEMENT + extra, now - IDEMPOTENCY_WINDOW_MS - 10),
      keyRows("tn_bounded_live", 400, now),
    ]);
    const reads: number[] = [];
    const counted = {
      prepare: (sql: string) => ({
        bind: (...values: unknown[]) => ({
          run: async () => {
            const result = await shard()
              .prepare(sql)
              .bind(...values)
              .run();
            reads.push(result.meta.rows_read);
            return result;
          },
        }),
      }),
    } as unknown as D1Database;
    expect(await deleteExpiredKeys(counted, now, 2)).toBe(2 * EXPIRED_KEYS_PER_STATEMENT);
    expect(await left("tn_bounded")).toBe(extra);
    expect(await deleteExpiredKeys(counted, now, 2)).toBe(extra);
    reads.length = 0;
    expect(await deleteExpiredKeys(counted, now, 2)).toBe(0);
    expect(reads).toHaveLength(1);
    expect(reads[0]).toBeLessThanOrEqual(2);
    expect(await left("tn_bounded_live")).toBe(400);
  });
});
