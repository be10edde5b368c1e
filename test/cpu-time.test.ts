import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { describe, expect, it, vi } from "vitest";
import { noUnits } from "../src/billable-units";
import { shardDatabase, shardNames } from "../src/control/shards";
import { FLUSH_AFTER_MS, LATE_WAIT_MS, STALE_AFTER_MS, UsageBuffer } from "../src/control/usage-buffer";
import worker from "../src/index";
import { cpuEntries } from "../src/jobs/cpu-time";
import { PASSES_JOB, recordInvocation } from "../src/jobs/pass-usage";
import { WORK_CHANNEL, type WorkLabel } from "../src/work-labels";
import { admin, call, jsonrpc, newTenant, untilLogged, usageLogSettled } from "./helpers";

// The Worker tails itself (wrangler.toml's tail_consumers): the platform hands tail() each invocation's trace, with
// the CPU milliseconds the invocation could not measure and the labels it published (src/work-labels.ts). Local
// workerd reports 0 ms and the test pool runs no tail consumer, so these tests hand tail() traces as the platform
// builds them, carrying the labels real calls published.

/** A trace as the platform gives tail(): the invocation's event, its CPU time and its diagnostics channel events. */
function trace(cpuTime: number, labels: unknown[], event: Record<string, unknown> = { request: {} }): TraceItem {
  const timestamp = Date.now();
  return {
    event,
    eventTimestamp: timestamp,
    cpuTime,
    wallTime: cpuTime * 3,
    outcome: "ok",
    logs: [],
    exceptions: [],
    diagnosticsChannelEvents: labels.map((message) => ({ channel: WORK_CHANNEL, message, timestamp })),
    scriptName: "context-edge",
    executionModel: "stateless",
    truncated: false,
  } as unknown as TraceItem;
}

const tool = (name: string, project: string | null = null): WorkLabel => ({
  tenantId: "t",
  source: "tool",
  name,
  project,
});

describe("CPU time: an invocation's trace shared among what it ran", () => {
  it("gives each call of the invocation an equal share, and the request's own work none", () => {
    const overhead = { tenantId: "t", source: "job", name: "requests", project: null, overhead: true };
    const entries = cpuEntries(trace(30, [tool("ping"), overhead, tool("memory_store", "p")]));
    expect(entries.map((e) => [e.tenantId, e.source, e.name, e.project, e.units.cpuMs, e.units.cpuCalls])).toEqual([
      ["t", "tool", "ping", null, 15, 1],
      ["t", "tool", "memory_store", "p", 15, 1],
    ]);
    // CPU time adds to a row's units, never to its calls.
    expect(entries.every((e) => e.calls === 0 && e.units.d1RowsRead === 0)).toBe(true);
    // With no call, the request's own work (an admin request, an OAuth exchange) takes it all.
    expect(cpuEntries(trace(8, [overhead])).map((e) => [e.name, e.units.cpuMs])).toEqual([["requests", 8]]);
    // Local workerd times nothing (0 ms of CPU and of wall time): such a trace records nothing, not a 0.
    expect(cpuEntries(trace(0, [tool("ping")]))).toEqual([]);
  });

  it("gives an invocation with no label to the deployment, by what it was; ignores what is not a label", () => {
    const junk = ["text", null, { tenantId: 1, source: "tool", name: "x" }, { tenantId: "t", source: "x", name: "y" }];
    const kinds = [
      [{ cron: "* * * * *", scheduledTime: 0 }, PASSES_JOB],
      [{ queue: "context-edge-jobs", batchSize: 3 }, "job_queue"],
      [{ request: { url: "https://x/dashboard" } }, "requests"],
    ] as const;
    for (const [event, name] of kinds) {
      const entries = cpuEntries(trace(5, junk, event));
      expect(entries.map((e) => [e.tenantId, e.source, e.name, e.units.cpuMs])).toEqual([["", "job", name, 5]]);
    }
  });
});

describe("CPU time through tail() into get_usage_report", () => {
  it("reports the mean CPU ms of each tool from the traces of its calls; a tool none was recorded for gets null", async () => {
    const t = await newTenant();
    const published: WorkLabel[] = [];
    const listener = (message: unknown) => published.push(message as WorkLabel);
    subscribe(WORK_CHANNEL, listener);
    try {
      const batch = [
        { name: "ping", arguments: {} },
        { name: "ping", arguments: {} },
        { name: "memory_store", arguments: { content: "CPU is billed past 30 M ms a month", project_id: "costs" } },
      ].map((params, id) => ({ jsonrpc: "2.0", id, method: "tools/call", params }));
      expect((await jsonrpc(t.apiKey, batch)).status).toBe(200);
      await untilLogged(t.tenantId, 3);
    } finally {
      unsubscribe(WORK_CHANNEL, listener);
    }
    // The request published one label a call, and one for its own work (the key's lookup).
    const own = published.filter((label) => label.tenantId === t.tenantId);
    expect(own.filter((label) => !label.overhead).map((label) => [label.name, label.project])).toEqual([
      ["ping", null],
      ["ping", null],
      ["memory_store", "costs"],
    ]);
    expect(own.filter((label) => label.overhead).map((label) => label.name)).toEqual(["requests"]);

    // A call whose invocation's trace never arrives (a tail event lost, a run without the tail consumer).
    await call(t.apiKey, "memory_list", {});
    await untilLogged(t.tenantId, 4);

    // CPU time arrives after its calls were logged: it schedules no write of its own, and goes with the next one.
    const ctx = createExecutionContext();
    await worker.tail!([trace(36, own)], env, ctx);
    await waitOnExecutionContext(ctx);
    const cpuRecorded = async () =>
      (await t.db.prepare("SELECT SUM(cpu_calls) AS n FROM usage_hours WHERE tenant_id = ?").bind(t.tenantId).first<{
        n: number | null;
      }>())!.n ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await cpuRecorded()).toBe(0);
    await call(t.apiKey, "ping", {});
    await untilLogged(t.tenantId, 5);
    await usageLogSettled(t.tenantId);
    expect(await cpuRecorded()).toBe(3);

    type Row = { tool: string; calls: number; cpu_ms: number | null };
    type Report = { tools: Row[]; totals: { cpu_ms: number | null; paid_plan_cpu_ms_per_month: number } };
    const report = await call<Report>(t.apiKey, "get_usage_report", {});
    const row = (name: string) => report.tools.find((r) => r.tool === name);
    // 36 ms over three calls: 12 each (the third ping's trace never came); the calls counted once, by the usage log,
    // not again by their CPU time.
    expect(row("ping")).toMatchObject({ calls: 3, cpu_ms: 12 });
    expect(row("memory_store")).toMatchObject({ calls: 1, cpu_ms: 12 });
    expect(row("memory_list")).toMatchObject({ calls: 1, cpu_ms: null });
    expect(report.totals.cpu_ms).toBe(36);
    expect(report.totals.paid_plan_cpu_ms_per_month).toBe(30_000_000);

    // The operator's total: every tenant's CPU time with the deployment's own.
    const deployment = await (await admin("GET", "/usage?days=1")).json<{ totals: { cpu_ms: number | null } }>();
    expect(deployment.totals.cpu_ms).toBeGreaterThanOrEqual(36);
  });
});

describe("CPU time costs no write of its own", () => {
  const entry = (tenantId: string) => ({
    tenantId,
    at: Date.now(),
    source: "tool" as const,
    name: "ping",
    project: null,
    failed: false,
    units: { ...noUnits(), cpuMs: 5, cpuCalls: 1 },
    calls: 0,
  });

  it("waits in the buffer for a write others schedule, or an hour", () => {
    const buffer = new UsageBuffer();
    expect(buffer.add(env, [entry("a")], [], true)).toBeNull();
    const scheduled = buffer.add(env, [{ ...entry("a"), calls: 1 }]);
    expect(scheduled).not.toBeNull();
    // Once scheduled, a late entry goes with that write.
    expect(buffer.add(env, [entry("a")], [], true)).toBe(scheduled);

    const quiet = new UsageBuffer();
    const start = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(start);
    try {
      expect(quiet.add(env, [entry("b")], [], true)).toBeNull();
      vi.spyOn(Date, "now").mockReturnValue(start + LATE_WAIT_MS - 1);
      expect(quiet.add(env, [entry("b")], [], true)).toBeNull();
      vi.spyOn(Date, "now").mockReturnValue(start + LATE_WAIT_MS);
      expect(quiet.add(env, [entry("b")], [], true)).not.toBeNull();
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("schedules a new write when the one scheduled never began (its invocation was cancelled first)", async () => {
    const buffer = new UsageBuffer();
    // The first invocation's timer never fires, as when workerd cancels it before it does.
    const timer = vi.spyOn(globalThis, "setTimeout").mockImplementationOnce((() => 0) as unknown as typeof setTimeout);
    const dead = buffer.add(env, [{ ...entry("d"), calls: 1 }]);
    timer.mockRestore();
    expect(dead).not.toBeNull();
    // Until it is well past its time, later calls go with it; then the next call schedules a write of its own.
    expect(buffer.add(env, [{ ...entry("d"), calls: 1 }])).toBe(dead);
    const now = vi.spyOn(Date, "now").mockReturnValue(Date.now() + FLUSH_AFTER_MS + STALE_AFTER_MS + 1);
    const fresh = buffer.add(env, [{ ...entry("d"), calls: 1 }]);
    now.mockRestore();
    expect(fresh).not.toBeNull();
    expect(fresh).not.toBe(dead);
    const written = vi.spyOn(buffer, "write");
    await fresh;
    expect(written).toHaveBeenCalledTimes(1);
  });

  it("gives a cron's time to the passes' next record on the first shard, which is written anyway", async () => {
    const ctx = createExecutionContext();
    await worker.tail!([trace(7, [], { cron: "* * * * *", scheduledTime: Date.now() })], env, ctx);
    await waitOnExecutionContext(ctx);
    const shard = shardNames(env)[0]!;
    const d1 = shardDatabase(env, shard);
    const passes = () =>
      d1
        .prepare("SELECT SUM(cpu_ms) AS ms, SUM(cpu_calls) AS n FROM usage_hours WHERE tenant_id = '' AND name = ?")
        .bind(PASSES_JOB)
        .first<{ ms: number | null; n: number | null }>();
    const before = await passes();
    // The next invocation on the shard that writes rows records itself, and the time carried with it.
    const units = { ...noUnits(), d1RowsWritten: 1 };
    await recordInvocation(d1, shard, {
      at: Date.now(),
      failed: false,
      units,
      passes: new Map(),
      statements: new Map(),
    });
    const after = await passes();
    expect((after!.ms ?? 0) - (before!.ms ?? 0)).toBe(7);
    expect((after!.n ?? 0) - (before!.n ?? 0)).toBe(1);
  });
});
