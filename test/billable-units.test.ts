import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callNeurons, meteredAi, meteredKv, meteredQueue } from "../src/adapters/metered-bindings";
import { noUnits, UnitMeter } from "../src/billable-units";
import { readConfig } from "../src/config";
import { shardDatabase } from "../src/control/shards";
import { CACHE_VALUE_IN_D1, clearCache, lookupCached, storeCached } from "../src/core/context/semantic-cache";
import { addHourRows, histogramBin, histogramPercentile, hourRows } from "../src/core/tenants/usage-hours";
import { tenantScope } from "../src/db/scope";
import type { Env } from "../src/env";
import {
  ADMIN_TOKEN,
  admin,
  call,
  moveTenant,
  newKey,
  newTenant,
  request,
  untilLogged,
  usageLogSettled,
  waitForEmbeddings,
} from "./helpers";

type Units = Record<string, number | null>;
type Report = {
  tools: (Units & { tool: string; calls: number })[];
  jobs: (Units & { job: string; runs: number })[];
  totals: Units & { per_day: Units; free_plan_daily: Units; binding: { unit: string; share: number } | null };
};

describe("billable units: the bins of the p95 histograms", () => {
  it("keep small values to 0.1 and larger ones within 2.5 %", () => {
    expect([0, 0.04, 0.05, 1, 2.26, 9.94].map(histogramBin)).toEqual([0, 0, 0.1, 1, 2.3, 9.9]);
    for (const value of [10, 37, 123, 999, 54_321, 2_000_000]) {
      const bin = histogramBin(value);
      expect(Math.abs(bin - value) / value).toBeLessThanOrEqual(0.025);
    }
    expect(histogramBin(-3)).toBe(0);
  });

  it("give the nearest-rank percentile", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100: p95 is 95
    const histogram: Record<string, number> = {};
    for (const v of values) histogram[histogramBin(v)] = (histogram[histogramBin(v)] ?? 0) + 1;
    const p95 = histogramPercentile(histogram, 0.95)!;
    expect(Math.abs(p95 - 95) / 95).toBeLessThanOrEqual(0.025);
    expect(histogramPercentile({}, 0.95)).toBeNull();
    expect(histogramPercentile({ "3": 1 }, 0.95)).toBe(3);
  });
});

describe("billable units: usage_hours", () => {
  it("sums a group's calls into one row an hour, merges the histograms; a new hour writes two rows, an update one", async () => {
    const d1 = shardDatabase(env, "SHARD_0");
    const tenantId = `tn_units_${crypto.randomUUID()}`;
    const at = Date.UTC(2026, 10, 27, 15, 20);
    const entry = (rowsRead: number, failed = false) => ({
      tenantId,
      at,
      source: "tool" as const,
      name: "search",
      project: null,
      failed,
      units: { ...noUnits(), d1RowsRead: rowsRead, d1RowsWritten: 1, kvReads: 1 },
    });
    const first = await addHourRows(d1, hourRows([entry(10), entry(20), entry(30, true)])).run();
    expect(first.meta.rows_written).toBe(2); // the row and its key's index entry
    const second = await addHourRows(d1, hourRows([entry(10)])).run();
    expect(second.meta.rows_written).toBe(1);
    const row = await d1
      .prepare("SELECT * FROM usage_hours WHERE tenant_id = ?")
      .bind(tenantId)
      .first<Record<string, number | string>>();
    expect(row).toMatchObject({
      hour: Date.UTC(2026, 10, 27, 15),
      source: "tool",
      name: "search",
      project: "",
      calls: 4,
      errors: 1,
      d1_rows_read: 70,
      d1_rows_written: 4,
      kv_reads: 4,
    });
    expect(JSON.parse(row!.read_hist as string)).toEqual({
      [histogramBin(10)]: 2,
      [histogramBin(20)]: 1,
      [histogramBin(30)]: 1,
    });
    expect(JSON.parse(row!.written_hist as string)).toEqual({ "1": 4 });
    await d1.prepare("DELETE FROM usage_hours WHERE tenant_id = ?").bind(tenantId).run();
  });
});

describe("billable units: the meter", () => {
  it("charges what a run starts to that run, after its awaits and after it returns, and settled() waits for it", async () => {
    const meter = new UnitMeter();
    const kv = meteredKv(env.CACHE, meter);
    const [a, b] = [noUnits(), noUnits()];
    let background: Promise<unknown> = Promise.resolve();
    await meter.charging(a, async () => {
      await kv.get("units-x");
      // Left running, as a waitUntil() after the response: its write comes after an await of its own.
      background = (async () => {
        await new Promise((r) => setTimeout(r, 20));
        await kv.put("units-x", "1");
      })();
    });
    await meter.charging(b, () => kv.get("units-y"));
    await background;
    await meter.settled();
    expect(a).toMatchObject({ kvReads: 1, kvWrites: 1 });
    expect(b).toMatchObject({ kvReads: 1, kvWrites: 0 });
    expect(meter.current).toMatchObject({ kvReads: 0, kvWrites: 0 });
  });
});

describe("billable units: bindings", () => {
  it("KV counts each key of a bulk read, and writes, deletes and lists apart", async () => {
    const meter = new UnitMeter();
    const kv = meteredKv(env.CACHE, meter);
    await kv.put("units-a", "1");
    await kv.get("units-a");
    await kv.get(["units-a", "units-b", "units-c"]);
    await kv.list({ prefix: "units-" });
    await kv.delete("units-a");
    expect(meter.current).toMatchObject({ kvReads: 4, kvWrites: 1, kvDeletes: 1, kvLists: 1 });
  });

  it("queues count messages; Workers AI counts neurons from reported tokens, else from the text", async () => {
    const meter = new UnitMeter();
    const sent: unknown[] = [];
    const queue = meteredQueue(
      {
        send: async (m: unknown) => void sent.push(m),
        sendBatch: async (ms: unknown[]) => void sent.push(...ms),
      } as unknown as Queue<unknown>,
      meter,
    );
    await queue.send({ a: 1 });
    await queue.sendBatch([{ body: 1 }, { body: 2 }, { body: 3 }]);
    expect(meter.current.queueSends).toBe(4);

    const ai = meteredAi(
      {
        run: async (model: string) =>
          model.includes("llama")
            ? { response: "{}", usage: { prompt_tokens: 1_000_000, completion_tokens: 100_000 } }
            : { data: [[0.1]] },
      } as unknown as Ai,
      meter,
    );
    await ai.run("@cf/meta/llama-4-scout-17b-16e-instruct" as never, {} as never);
    // 24,545 neurons per M input tokens and 77,273 per M output: 24,545 + 7,727.3, rounded up.
    expect(meter.current.aiNeurons).toBe(32_273);
    // No usage reported: 40,000 characters of text are ~10,000 tokens at 1,075 neurons per M: 10.75, rounded up.
    expect(callNeurons("@cf/qwen/qwen3-embedding-0.6b", { queries: ["q".repeat(40_000)] }, { data: [] })).toBe(11);
    expect(callNeurons("@cf/unknown/model", { text: ["x".repeat(4000)] }, {})).toBe(0);
  });
});

describe("billable units per tool call and job, through the real routes and queues", () => {
  it("get_usage_report gives each tool's and job's D1 rows, queue sends and local rows, and totals against the Free plan", async () => {
    const t = await newTenant();
    const stored = [];
    for (let i = 0; i < 3; i++)
      stored.push(
        await call(t.apiKey, "memory_store", { content: `units note ${i} about lighthouses`, namespace: "p" }),
      );
    await waitForEmbeddings(t.tenantId);
    await call(t.apiKey, "search", { query: "lighthouses", project: "p" });
    await call(t.apiKey, "memory_list", { project: "p" });
    await call(t.apiKey, "memory_context_build", { query: "lighthouses", token_budget: 500, namespace: "p" });
    await untilLogged(t.tenantId, 6);
    await usageLogSettled(t.tenantId);
    const report = await waitForJobUnits(t.apiKey, ["embed", "link", "usage_log"]);
    const tool = (name: string) => report.tools.find((r) => r.tool === name)!;
    const job = (name: string) => report.jobs.find((r) => r.job === name)!;

    expect(stored.every((s) => typeof s.id === "string")).toBe(true);
    expect(tool("memory_store").calls).toBe(3);
    expect(tool("memory_store").d1_rows_written).toBeGreaterThan(5); // an item, its chunk, their index entries
    expect(tool("memory_store").d1_rows_written_p95).toBeGreaterThanOrEqual(
      tool("memory_store").d1_rows_written! * 0.9,
    );
    expect(tool("memory_store").queue_sends).toBeGreaterThanOrEqual(1); // its embed job, and a share of the log's send
    expect(tool("memory_list").d1_rows_written).toBe(0);
    expect(tool("memory_list").d1_rows_read).toBeGreaterThanOrEqual(3);
    expect(tool("search").d1_rows_read).toBeGreaterThan(0);
    // Its context stored in the semantic cache after the response, value and entry in one D1 row: no KV write.
    expect(tool("memory_context_build")).toMatchObject({ kv_writes: 0 });
    expect(tool("memory_context_build").d1_rows_written).toBeGreaterThan(0);
    // The local vector index stands in for Vectorize: its rows are counted apart, and billed by nobody.
    expect(job("embed").local_rows_written).toBeGreaterThan(0);
    expect(job("embed").ai_neurons).toBe(0); // the local embedder
    expect(job("usage_log").d1_rows_written).toBeGreaterThan(0);
    // The jobs' records are written by the consumer itself, no usage message: a link job sends nothing.
    expect(job("link").queue_sends).toBe(0);

    const sum = (unit: string) =>
      [...report.tools.map((r) => (r[unit] ?? 0) * r.calls), ...report.jobs.map((r) => (r[unit] ?? 0) * r.runs)].reduce(
        (a, b) => a + b,
        0,
      );
    expect(report.totals.d1_rows_written).toBeCloseTo(sum("d1_rows_written"), -1);
    expect(report.totals.d1_rows_read).toBeCloseTo(sum("d1_rows_read"), -1);
    expect(report.totals.local_rows_written).toBeCloseTo(sum("local_rows_written"), -1);
    expect(report.totals.free_plan_daily).toMatchObject({
      d1_rows_read: 5_000_000,
      d1_rows_written: 100_000,
      kv_writes: 1_000,
    });
    expect(report.totals.per_day.d1_rows_written).toBe(report.totals.d1_rows_written);
    const shares = Object.entries(report.totals.free_plan_daily).map(
      ([unit, limit]) => [unit, report.totals.per_day[unit]! / limit!] as const,
    );
    const [unit, share] = shares.reduce((a, b) => (b[1] > a[1] ? b : a));
    expect(report.totals.binding).toEqual({ unit, share: Math.round(share * 10_000) / 10_000 });

    // The operator's stats give the same for the last day.
    const stats = (await (await admin("GET", `/tenants/${t.tenantId}/stats`)).json()) as {
      billable_units_24h: { tools: { name: string; d1_rows_written: number }[]; jobs: { name: string }[] };
    };
    expect(stats.billable_units_24h.tools.find((r) => r.name === "memory_store")?.d1_rows_written).toBe(
      tool("memory_store").d1_rows_written,
    );
    expect(stats.billable_units_24h.jobs.map((r) => r.name)).toEqual(expect.arrayContaining(["embed", "usage_log"]));

    // Another tenant sees none of it; a key limited to another project sees none of these calls, and no jobs.
    const other = await newTenant();
    const empty = await call<Report>(other.apiKey, "get_usage_report", {});
    expect(empty.jobs).toEqual([]);
    expect(empty.totals.d1_rows_written).toBe(0);
    const limited = await newKey(t.tenantId, { projects: ["q"] });
    const theirs = await call<Report>(limited.apiKey, "get_usage_report", {});
    expect(theirs.tools.filter((r) => r.tool !== "get_usage_report")).toEqual([]);
    expect(theirs.jobs).toEqual([]);

    // A move is charged to its tenant: what it read and wrote on both shards and the control database.
    const moved = await moveTenant(t, t.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0");
    const after = await waitForJobUnits(moved.apiKey, ["move"]);
    const move = after.jobs.find((r) => r.job === "move")!;
    expect(move.d1_rows_written).toBeGreaterThan(10);
    expect(move.d1_rows_read).toBeGreaterThan(10);
  });
});

describe("the semantic cache's values: in D1 up to CACHE_VALUE_IN_D1 bytes, in KV beyond", () => {
  it("serves both from a lookup, and spends a KV write only on the large one", async () => {
    const t = await newTenant();
    const scope = tenantScope(t.db, t.tenantId);
    const config = { ...readConfig(env as unknown as Env).cache, similarityThreshold: 0.9 };
    const meter = new UnitMeter();
    const kv = meteredKv(env.CACHE, meter);
    const vector = new Float32Array([0.6, 0.8]);
    const store = (params: string, value: unknown) =>
      storeCached(scope, kv, config, {
        project: "p",
        params,
        generation: 0,
        linkSeq: 0,
        linkItems: [],
        query: params,
        vector,
        value,
      });
    const small = { context: "harbour ".repeat(100) };
    const large = { context: "harbour ".repeat(CACHE_VALUE_IN_D1 / 8 + 1) };
    await store("small", small);
    expect(meter.current.kvWrites).toBe(0);
    await store("large", large);
    expect(meter.current.kvWrites).toBe(1);
    expect((await lookupCached(scope, kv, config, "p", "small", vector)).value).toEqual(small);
    expect((await lookupCached(scope, kv, config, "p", "large", vector)).value).toEqual(large);
    const rows = await t.db
      .prepare("SELECT params_hash, value IS NULL AS in_kv FROM cache_entries WHERE tenant_id = ? ORDER BY params_hash")
      .bind(t.tenantId)
      .all();
    expect(rows.results).toEqual([
      { params_hash: "large", in_kv: 1 },
      { params_hash: "small", in_kv: 0 },
    ]);
    // Clearing drops both entries and deletes the one KV value.
    expect(await clearCache(scope, kv, null)).toBe(2);
    expect(meter.current.kvDeletes).toBe(1);
    expect((await env.CACHE.list({ prefix: `ctx:${t.tenantId}:` })).keys).toEqual([]);
  });
});

describe("billable units of the admin API's export and import", () => {
  it("are logged as the tenant's export and import jobs once the stream is read or the import done", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", {
      memories: [{ content: "exported one" }, { content: "exported two" }],
    });
    const exported = await admin("GET", `/tenants/${t.tenantId}/export`);
    const lines = (await exported.text()).trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(3);
    const other = await newTenant();
    const imported = await request(`/admin/tenants/${other.tenantId}/import`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/x-ndjson" },
      body: `${lines.join("\n")}\n`,
    });
    expect(imported.status).toBe(200);
    const exportJob = (await waitForJobUnits(t.apiKey, ["export"])).jobs.find((r) => r.job === "export")!;
    expect(exportJob).toMatchObject({ runs: 1, failed: 0, d1_rows_written: 0 });
    expect(exportJob.d1_rows_read).toBeGreaterThanOrEqual(2);
    const importJob = (await waitForJobUnits(other.apiKey, ["import"])).jobs.find((r) => r.job === "import")!;
    expect(importJob.d1_rows_written).toBeGreaterThan(4); // two items, their chunks and index entries
  });
});

/** The usage report once the named job kinds have logged their units (they reach the log after their batch). */
async function waitForJobUnits(apiKey: string, jobs: string[]): Promise<Report> {
  const started = Date.now();
  for (;;) {
    const report = await call<Report>(apiKey, "get_usage_report", {});
    if (jobs.every((j) => report.jobs.some((r) => r.job === j))) return report;
    if (Date.now() - started > 15_000) throw new Error(`jobs logged: ${report.jobs.map((r) => r.job).join(", ")}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
