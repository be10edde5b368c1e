import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { UnitMeter } from "../src/billable-units";
import { shardDatabase } from "../src/control/shards";
import { readItemContents, readItems } from "../src/core/memory/item-reads";
import { meteredD1 } from "../src/db/metered-d1";
import { tenantScope } from "../src/db/scope";
import { call, jsonrpc, newTenant, tenantDb, untilLogged, waitForEmbeddings } from "./helpers";

/** The usage log's round trips of all calls of one tool, summed (its hourly aggregates keep no row a call). */
async function loggedTrips(tenantId: string, tool: string, calls: number): Promise<number> {
  await untilLogged(tenantId, calls, tool);
  const row = await (await tenantDb(tenantId))
    .prepare("SELECT SUM(d1_round_trips) AS n FROM usage_hours WHERE tenant_id = ? AND source = 'tool' AND name = ?")
    .bind(tenantId, tool)
    .first<{ n: number }>();
  return Math.round(row!.n * 1000) / 1000;
}

describe("metered D1", () => {
  it("counts a statement run alone as one trip and a batch of any size as one", async () => {
    const meter = new UnitMeter();
    const shard = shardDatabase(env, "SHARD_0");
    const d1 = meteredD1(shard, meter);
    expect(await d1.prepare("SELECT ? AS x").bind(7).first("x")).toBe(7);
    await d1.prepare("SELECT 1").all();
    await d1.prepare("SELECT 1").raw();
    expect(meter.current.d1RoundTrips).toBe(3);
    const results = await d1.batch([
      d1.prepare("SELECT 1 AS a"),
      d1.prepare("SELECT ? AS b").bind(2),
      shard.prepare("SELECT 3 AS c"),
    ]);
    expect(results.map((r) => r.results[0])).toEqual([{ a: 1 }, { b: 2 }, { c: 3 }]);
    expect(meter.current.d1RoundTrips).toBe(4);
  });

  it("first() and raw() answer as the binding's own, and every statement's rows come from D1's meta", async () => {
    const meter = new UnitMeter();
    const shard = shardDatabase(env, "SHARD_0");
    const d1 = meteredD1(shard, meter);
    const sql = "SELECT value AS n, 'x' || value AS label, NULL AS absent FROM json_each(?) ORDER BY value";
    for (const values of ["[3,1,2]", "[]"]) {
      const [mine, theirs] = [d1.prepare(sql).bind(values), shard.prepare(sql).bind(values)];
      expect(await mine.first()).toEqual(await theirs.first());
      expect(await mine.first("label")).toEqual(await theirs.first("label"));
      expect(await mine.raw()).toEqual(await theirs.raw());
      expect(await mine.all()).toMatchObject({ results: (await theirs.all()).results });
    }
    expect(await d1.prepare(sql).bind("[3,1,2]").raw({ columnNames: true })).toEqual(
      await shard.prepare(sql).bind("[3,1,2]").raw({ columnNames: true }),
    );
    await expect(d1.prepare(sql).bind("[1]").first("nope")).rejects.toThrow(/D1_COLUMN_NOTFOUND/);

    const table = `metered_${crypto.randomUUID().replaceAll("-", "")}`;
    await shard.prepare(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, v TEXT)`).run();
    await shard.prepare(`CREATE INDEX ${table}_v ON ${table} (v)`).run();
    const before = { ...meter.current };
    const inserted = await shard.prepare(`INSERT INTO ${table} (v) VALUES ('a'), ('b'), ('c')`).run();
    await shard.prepare(`DELETE FROM ${table}`).run();
    const insert = await d1.prepare(`INSERT INTO ${table} (v) VALUES ('a'), ('b'), ('c')`).run();
    expect(insert.meta.rows_written).toBe(inserted.meta.rows_written);
    expect(inserted.meta.rows_written).toBe(6); // three rows and their three index entries
    const [scan] = await d1.batch([d1.prepare(`SELECT * FROM ${table}`)]);
    expect(meter.current.d1RowsWritten - before.d1RowsWritten).toBe(6);
    expect(meter.current.d1RowsRead - before.d1RowsRead).toBe(insert.meta.rows_read + scan!.meta.rows_read);
    expect(scan!.meta.rows_read).toBe(3);
    const local = new UnitMeter();
    await meteredD1(shard, local, "local").prepare(`SELECT * FROM ${table}`).first();
    expect(local.current).toMatchObject({ d1RoundTrips: 0, d1RowsRead: 0, localRowsRead: 3 });
    await shard.prepare(`DROP TABLE ${table}`).run();
  });
});

describe("reads by id", () => {
  it("readItems and readItemContents read 1,100 ids (three statements) in one round trip each", async () => {
    const t = await newTenant();
    const { ids } = await call(t.apiKey, "memory_batch_store", {
      memories: [{ content: "first" }, { content: "second" }, { content: "third" }],
    });
    const asked = [...Array.from({ length: 1097 }, (_, i) => `mem_missing_${i}`), ...ids];
    const meter = new UnitMeter();
    const scope = tenantScope(meteredD1(t.db, meter), t.tenantId);
    const items = await readItems(scope, asked);
    expect([...items.keys()].sort()).toEqual([...ids].sort());
    expect(meter.current.d1RoundTrips).toBe(1);
    const contents = await readItemContents(scope, asked);
    expect([...contents.values()].sort()).toEqual(["first", "second", "third"]);
    expect(meter.current.d1RoundTrips).toBe(2);
  });
});

describe("round trips per tool call, as the usage log records them", () => {
  it("reads in one round trip where the data allows and shares a batch's write among its calls", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", {
      namespace: "p",
      memories: [
        "The lighthouse keeper logs the tide twice a day",
        "Tide tables are printed every spring",
        "The keeper's cat sleeps on the logbook",
      ].map((content) => ({ content })),
    });
    await waitForEmbeddings(t.tenantId);
    const hit = (await call(t.apiKey, "search", { query: "lighthouse tide", project: "p" })).results[0];
    for (const mode of ["keyword", "vector"])
      expect((await call(t.apiKey, "search", { query: "lighthouse tide", project: "p", mode })).results).not.toEqual(
        [],
      );
    await call(t.apiKey, "get_context", { chunk_id: hit.chunk_id, count: 2 });
    await call(t.apiKey, "context_get_working_set", { project_id: "p" });
    await call(t.apiKey, "context_set_current_task", { project_id: "p", task_id: "t1" });
    const set = await call(t.apiKey, "context_get_working_set", { project_id: "p" });
    expect(set.working_set.task_id).toBe("t1");
    await call(t.apiKey, "memory_context_build", {
      query: "lighthouse tide",
      namespace: "p",
      token_budget: 1000,
      use_cache: false,
      include_related: false,
    });
    await call(t.apiKey, "ping");

    // The keyword list (while the vector index answers), then the vector hits' rows beside what the first hits point
    // to (feedback words, neighbours, links): hybrid and keyword alone; vector alone needs only the second.
    expect(await loggedTrips(t.tenantId, "search", 3), "search").toBe(2 + 2 + 1);
    expect(await loggedTrips(t.tenantId, "get_context", 1), "get_context").toBe(1);
    expect(await loggedTrips(t.tenantId, "context_get_working_set", 2), "context_get_working_set").toBe(1 + 1);
    // search as above, then the direct hits' rows (links not followed here).
    expect(await loggedTrips(t.tenantId, "memory_context_build", 1), "memory_context_build").toBe(3);
    expect(await loggedTrips(t.tenantId, "ping", 1), "ping").toBe(0);

    // add_message learns its conversation's project in the write's own read: a read and a write.
    await call(t.apiKey, "add_message", { contextId: "ctx", message: "first words", role: "user" });
    await call(t.apiKey, "add_message", { contextId: "ctx", message: "second words", role: "assistant" });
    expect(await loggedTrips(t.tenantId, "add_message", 2), "add_message").toBe(2 + 2);

    const turns = Array.from({ length: 10 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "tools/call",
      params: {
        name: "log_chat",
        arguments: { conversation_id: "c", project_id: "p", role: "user", content: `turn ${i}` },
      },
    }));
    expect((await (await jsonrpc(t.apiKey, turns)).json<any[]>()).every((r) => r.result && !r.result.isError)).toBe(
      true,
    );
    // The ten share one write: the read before it, the write, the summary counters.
    expect(await loggedTrips(t.tenantId, "log_chat", 10)).toBeLessThanOrEqual(3);
  });

  it("get_usage_report gives each tool's mean round trips, D1 wait and the worker's own time", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "one stored memory", namespace: "p" });
    await call(t.apiKey, "search", { query: "memory", project: "p" });
    // 30 batched turns share their batch's 2-3 round trips: a mean under 0.1 a call must not round to 0.
    const turns = Array.from({ length: 30 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "tools/call",
      params: {
        name: "log_chat",
        arguments: { conversation_id: "c", project_id: "p", role: "user", content: `turn ${i}` },
      },
    }));
    expect((await (await jsonrpc(t.apiKey, turns)).json<any[]>()).every((r) => r.result && !r.result.isError)).toBe(
      true,
    );
    await untilLogged(t.tenantId, 32);
    const report = await call(t.apiKey, "get_usage_report", { period: "day" });
    const search = report.tools.find((x: any) => x.tool === "search");
    expect(search.calls).toBe(1);
    expect(search.d1_round_trips).toBe(await loggedTrips(t.tenantId, "search", 1));
    expect(search.d1_ms).toBeGreaterThanOrEqual(0);
    expect(search.worker_p50_ms).toBeLessThanOrEqual(search.p50_ms);
    expect(report.tools.find((x: any) => x.tool === "memory_store").d1_round_trips).toBeGreaterThanOrEqual(1);
    const trips = await loggedTrips(t.tenantId, "log_chat", 30);
    expect(trips).toBeGreaterThanOrEqual(2);
    expect(report.tools.find((x: any) => x.tool === "log_chat").d1_round_trips * 30).toBeCloseTo(trips, 0);
  });
});
