import { describe, expect, it } from "vitest";
import { call, jsonrpc, newTenant, type RpcResponse, untilLogged } from "./helpers";

// A JSON-RPC batch's consecutive log_chat calls share one write (tools with handleMany); each call is
// still checked, answered and logged on its own, and one bad call never costs the others.

const message = (id: number, conversation: string, content: string, project = "p") => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: {
    name: "log_chat",
    arguments: { conversation_id: conversation, role: id % 2 ? "user" : "assistant", content, project_id: project },
  },
});

async function batch(apiKey: string, body: unknown[]): Promise<RpcResponse[]> {
  const response = await jsonrpc(apiKey, body);
  expect(response.status).toBe(200);
  return (await response.json<RpcResponse[]>()).sort((a, b) => Number(a.id) - Number(b.id));
}

describe("log_chat in a JSON-RPC batch", () => {
  it("writes the batch's messages in order, interleaved conversations included, with a ping in the middle", async () => {
    const t = await newTenant();
    const body: unknown[] = [];
    for (let i = 1; i <= 30; i++) body.push(message(i, i % 3 === 0 ? "two" : "one", `turn ${i} about topic ${i}`));
    body.splice(10, 0, { jsonrpc: "2.0", id: 100, method: "ping" });
    const answers = await batch(t.apiKey, body);
    expect(answers).toHaveLength(31);
    expect(answers.every((a) => !a.error)).toBe(true);
    expect(new Set(answers.filter((a) => a.id !== 100).map((a) => a.result.message_id)).size).toBe(30);

    const one = await call(t.apiKey, "retrieve_context", { contextId: "one" });
    const two = await call(t.apiKey, "retrieve_context", { contextId: "two" });
    const turns = (r: { messages: { content: string }[] }) => r.messages.map((m) => Number(m.content.split(" ")[1]));
    expect(turns(one)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1).filter((i) => i % 3 !== 0));
    expect(turns(two)).toEqual([3, 6, 9, 12, 15, 18, 21, 24, 27, 30]);
  });

  it("numbers each conversation's messages consecutively across batches, and its counters add up", async () => {
    const t = await newTenant();
    await call(t.apiKey, "log_chat", {
      conversation_id: "one",
      role: "user",
      content: "before any batch",
      project_id: "p",
    });
    for (const start of [1, 20]) {
      const body = Array.from({ length: 12 }, (_, i) =>
        message(start + i, (start + i) % 4 === 0 ? "two" : "one", `turn ${start + i}`),
      );
      expect((await batch(t.apiKey, body)).every((a) => !a.error)).toBe(true);
    }
    const rows = await t.db
      .prepare(
        "SELECT conversation_id AS c, position, content, tokens FROM items WHERE tenant_id = ? ORDER BY conversation_id, position",
      )
      .bind(t.tenantId)
      .all<{ c: string; position: number; content: string; tokens: number }>();
    for (const conversation of ["one", "two"]) {
      const own = rows.results.filter((r) => r.c === conversation);
      expect(own.map((r) => r.position)).toEqual(own.map((_, i) => i));
      const counters = await t.db
        .prepare("SELECT message_count, tokens FROM conversations WHERE tenant_id = ? AND id = ?")
        .bind(t.tenantId, conversation)
        .first();
      expect(counters).toEqual({ message_count: own.length, tokens: own.reduce((sum, r) => sum + r.tokens, 0) });
    }
    const one = rows.results.filter((r) => r.c === "one").map((r) => r.content);
    expect(one.slice(0, 3)).toEqual(["before any batch", "turn 1", "turn 2"]);
    expect(rows.results.filter((r) => r.c === "two").map((r) => r.content)).toEqual([
      "turn 4",
      "turn 8",
      "turn 12",
      "turn 20",
      "turn 24",
      "turn 28",
    ]);
  });

  it("keeps positions consecutive when a batch's rows need more than one statement", async () => {
    const t = await newTenant();
    // ~90,000 characters a message: seven of them exceed what one statement binds, so the rows split.
    const long = (n: number) => `message ${n} ${"lorem ipsum dolor sit amet ".repeat(3_300)}`;
    const body = Array.from({ length: 7 }, (_, i) => message(i + 1, "long", long(i + 1)));
    expect((await batch(t.apiKey, body)).every((a) => !a.error)).toBe(true);
    const rows = await t.db
      .prepare("SELECT position, substr(content, 1, 10) AS head FROM items WHERE tenant_id = ? ORDER BY position")
      .bind(t.tenantId)
      .all<{ position: number; head: string }>();
    expect(rows.results.map((r) => r.position)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(rows.results.map((r) => r.head.trim())).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => `message ${n}`));
  });

  it("answers a bad call with its own error and still writes every other message", async () => {
    const t = await newTenant();
    await call(t.apiKey, "log_chat", {
      conversation_id: "elsewhere",
      role: "user",
      content: "first",
      project_id: "other",
    });
    const body = [
      message(1, "c", "alpha one"),
      message(2, "c", "alpha two"),
      // This conversation belongs to project "other": CONFLICT for this call only.
      message(3, "elsewhere", "intruder", "p"),
      message(4, "c", "alpha four"),
      {
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "log_chat", arguments: { conversation_id: "c", role: "robot", content: "x" } },
      },
      message(6, "c", "alpha six"),
    ];
    const answers = await batch(t.apiKey, body);
    expect(answers.map((a) => (a.error ? a.error.data?.code : "ok"))).toEqual([
      "ok",
      "ok",
      "CONFLICT",
      "ok",
      "INVALID_PARAMETER",
      "ok",
    ]);
    expect(answers[4]!.error!.message).toContain("role");
    const c = await call(t.apiKey, "retrieve_context", { contextId: "c" });
    expect(c.messages.map((m: { content: string }) => m.content)).toEqual([
      "alpha one",
      "alpha two",
      "alpha four",
      "alpha six",
    ]);
    const elsewhere = await call(t.apiKey, "retrieve_context", { contextId: "elsewhere" });
    expect(elsewhere.messages.map((m: { content: string }) => m.content)).toEqual(["first"]);
  });

  it("logs every call of the batch in the usage log, errors with their codes", async () => {
    const t = await newTenant();
    const answers = await batch(t.apiKey, [
      message(1, "u", "one"),
      message(2, "u", "two"),
      { ...message(3, "u", "three"), params: { name: "log_chat", arguments: { role: "user" } } },
    ]);
    expect(answers.filter((a) => a.error)).toHaveLength(1);
    await untilLogged(t.tenantId, 3);
    const hours = await t.db
      .prepare(
        "SELECT SUM(calls) AS calls, SUM(errors) AS errors FROM usage_hours WHERE tenant_id = ? AND name = 'log_chat'",
      )
      .bind(t.tenantId)
      .first();
    expect(hours).toEqual({ calls: 3, errors: 1 });
    // The failed call keeps a row of its own, with its code.
    const failed = await t.db
      .prepare("SELECT tool, error_code FROM tool_calls WHERE tenant_id = ? AND error_code IS NOT NULL")
      .bind(t.tenantId)
      .all();
    expect(failed.results).toEqual([{ tool: "log_chat", error_code: "INVALID_PARAMETER" }]);
  });
});

describe("memory_store and store_memory in a JSON-RPC batch", () => {
  const tool = (id: number, name: string, args: Record<string, unknown>) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: args },
  });

  it("answer as if called one by one (duplicates name the earlier call, a key's last memory wins) and write in one round trip", async () => {
    const t = await newTenant();
    const answers = await batch(t.apiKey, [
      tool(1, "memory_store", { content: "Deploys happen on Tuesdays", namespace: "ops" }),
      tool(2, "memory_store", { content: "Deploys happen on Tuesdays", namespace: "ops" }),
      tool(3, "memory_store", { content: "On call: Ana", key: "oncall", namespace: "ops" }),
      tool(4, "memory_store", { content: "On call: Bo", key: "oncall", namespace: "ops" }),
      tool(5, "store_memory", {
        file_name: "runbook.md",
        content: "Restart the queue consumer first.",
        project_id: "ops",
      }),
      tool(6, "store_memory", { file_name: "faq.md", content: "Ask in #ops.", project_id: "ops" }),
    ]);
    const r = answers.map((a) => a.result);
    expect(r[1]).toMatchObject({ duplicate: true, duplicate_of: r[0].id });
    expect(r[3]).toMatchObject({ key: "oncall", superseded: [r[2].id] });
    expect(r[4]).toMatchObject({ file_name: "runbook.md", chunk_count: 1, duplicate_of: null });
    expect(await call(t.apiKey, "memory_get", { key: "oncall", namespace: "ops" })).toMatchObject({ id: r[3].id });
    await untilLogged(t.tenantId, 7);
    const { results } = await t.db
      .prepare(
        "SELECT name AS tool, SUM(calls) AS calls, SUM(d1_round_trips) AS trips FROM usage_hours WHERE tenant_id = ? AND name IN ('memory_store', 'store_memory') GROUP BY name ORDER BY name",
      )
      .bind(t.tenantId)
      .all<{ tool: string; calls: number; trips: number }>();
    // Two groups (memory_store x4, store_memory x2), each one read before its write and the write: 0.5 and 1 a call.
    expect(results.map((x) => [x.tool, x.calls, x.trips])).toEqual([
      ["memory_store", 4, 2],
      ["store_memory", 2, 2],
    ]);
  });
});
