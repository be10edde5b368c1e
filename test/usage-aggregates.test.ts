import { describe, expect, it } from "vitest";
import { noUnits } from "../src/billable-units";
import { SAMPLE_EVERY } from "../src/control/usage-buffer";
import { LATENCY_BOUNDS_MS, latencyPercentile, mergeHistograms } from "../src/core/tenants/latency-histogram";
import { hourRows } from "../src/core/tenants/usage-hours";
import { call, jsonrpc, newKey, newTenant, type RpcResponse, untilLogged, usageLogSettled } from "./helpers";

type ToolRow = {
  tool: string;
  calls: number;
  errors: number;
  p50_ms: number | null;
  p95_ms: number | null;
  queue_sends: number;
  queue_operations: number;
};
type Report = {
  tools: ToolRow[];
  buckets: { calls: Record<string, number>; errors: number; p50_ms: number | null; p95_ms: number | null }[];
  jobs: { job: string; runs: number; d1_rows_written: number }[];
  total_calls: number;
  quotas: { calls_per_minute: { usage: number } };
};

describe("usage aggregates: the latency histogram", () => {
  it("gives p50 and p95 within their bucket, interpolated: 1..1000 ms gives ~500 and ~950", () => {
    const entries = Array.from({ length: 1000 }, (_, i) => ({
      tenantId: "t",
      at: 0,
      source: "tool" as const,
      name: "search",
      project: null,
      failed: false,
      units: { ...noUnits(), d1Ms: 0.5 },
      durationMs: i + 1,
    }));
    const [row] = hourRows(entries);
    const latency = Object.fromEntries(row!.latencyHist);
    expect(Object.keys(latency).every((k) => (LATENCY_BOUNDS_MS as readonly number[]).includes(Number(k)))).toBe(true);
    const p50 = latencyPercentile(latency, 0.5)!;
    const p95 = latencyPercentile(latency, 0.95)!;
    // 500 falls in (300, 500], 950 in (700, 1000]; interpolated inside them.
    expect(p50).toBeGreaterThan(300);
    expect(p50).toBeLessThanOrEqual(500);
    expect(p95).toBeGreaterThan(700);
    expect(p95).toBeLessThanOrEqual(1000);
    expect(Math.abs(p50 - 500) / 500).toBeLessThan(0.1);
    expect(Math.abs(p95 - 950) / 950).toBeLessThan(0.1);
    // The worker's own time is each duration less its D1 wait.
    expect(latencyPercentile(Object.fromEntries(row!.workerHist), 0.5)).toBeLessThanOrEqual(p50);
    expect(latencyPercentile({}, 0.5)).toBeNull();
    expect(mergeHistograms([{ "5": 1 }, { "5": 2, "10": 1 }])).toEqual({ "5": 3, "10": 1 });
  });
});

describe("usage aggregates through /jsonrpc", () => {
  it("50 calls: one usage_hours row a tool and hour, errors counted, a row each only for the failed and a sample", async () => {
    const t = await newTenant();
    const batch = [
      ...Array.from({ length: 49 }, (_, i) => ({
        jsonrpc: "2.0",
        id: i,
        method: "tools/call",
        params: { name: "ping", arguments: {} },
      })),
      // Refused: an unknown doc_type is INVALID_PARAMETER.
      {
        jsonrpc: "2.0",
        id: 49,
        method: "tools/call",
        params: { name: "retrieve_by_type", arguments: { doc_type: "code" } },
      },
    ];
    expect((await jsonrpc(t.apiKey, batch)).status).toBe(200);
    await untilLogged(t.tenantId, 50);
    await usageLogSettled(t.tenantId);

    const hours = await t.db
      .prepare("SELECT name, calls, errors, latency_hist FROM usage_hours WHERE tenant_id = ? AND source = 'tool'")
      .bind(t.tenantId)
      .all<{ name: string; calls: number; errors: number; latency_hist: string }>();
    // One row a tool (two if the batch straddled an hour): never a row a call.
    expect(hours.results.length).toBeLessThanOrEqual(4);
    const sum = (name: string, column: "calls" | "errors") =>
      hours.results.filter((r) => r.name === name).reduce((n, r) => n + r[column], 0);
    expect([sum("ping", "calls"), sum("ping", "errors")]).toEqual([49, 0]);
    expect([sum("retrieve_by_type", "calls"), sum("retrieve_by_type", "errors")]).toEqual([1, 1]);

    const rows = await t.db
      .prepare("SELECT tool, error_code FROM tool_calls WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ tool: string; error_code: string | null }>();
    expect(rows.results.filter((r) => r.error_code !== null)).toEqual([
      { tool: "retrieve_by_type", error_code: "INVALID_PARAMETER" },
    ]);
    // The isolate keeps one success in SAMPLE_EVERY: 49 give one at most, wherever its count stood.
    const sampled = rows.results.filter((r) => r.error_code === null).length;
    expect(sampled).toBeLessThanOrEqual(Math.ceil(49 / SAMPLE_EVERY));

    // Another key of the tenant: the batch spent this one's 40 calls a minute.
    const reader = await newKey(t.tenantId);
    const report = await call<Report>(reader.apiKey, "get_usage_report", {});
    const ping = report.tools.find((r) => r.tool === "ping")!;
    expect(ping).toMatchObject({ calls: 49, errors: 0, queue_sends: 0, queue_operations: 0 });
    const refused = report.tools.find((r) => r.tool === "retrieve_by_type")!;
    expect(refused).toMatchObject({ calls: 1, errors: 1 });
    // p50 and p95 are the histogram's, as the report reads it.
    const latency = mergeHistograms(
      hours.results.filter((r) => r.name === "ping").map((r) => JSON.parse(r.latency_hist)),
    );
    expect(ping.p50_ms).toBeCloseTo(latencyPercentile(latency, 0.5)!, 2);
    expect(ping.p95_ms).toBeCloseTo(latencyPercentile(latency, 0.95)!, 2);
    expect(ping.p50_ms!).toBeLessThanOrEqual(ping.p95_ms!);
    expect(report.buckets.reduce((n, b) => n + (b.calls.ping ?? 0), 0)).toBe(49);
    expect(report.buckets.reduce((n, b) => n + b.errors, 0)).toBe(1);
    expect(report.total_calls).toBe(50);
    expect(report.quotas.calls_per_minute.usage).toBeGreaterThan(0);

    // What the log's writes cost: a few rows for the 50 calls, not the four a call (row and index entries) of a row each.
    // That cost is recorded with the next write (the report's own call made one).
    await expect
      .poll(async () => (await call<Report>(reader.apiKey, "get_usage_report", {})).jobs.map((j) => j.job), {
        timeout: 5_000,
        interval: 300,
      })
      .toContain("usage_log");
    const { jobs } = await call<Report>(reader.apiKey, "get_usage_report", {});
    const log = jobs.find((j) => j.job === "usage_log")!;
    expect(log.d1_rows_written * log.runs).toBeLessThan(30);

    // The conversation metrics read the same aggregates.
    const metrics = await call<{ metrics: { totalCalls: number; byType: Record<string, number> } }>(
      reader.apiKey,
      "get_context_metrics",
      {},
    );
    expect(metrics.metrics.byType.ping).toBe(49);
  });
});

describe("usage aggregates: conversations", () => {
  it("get_tool_conversations counts every call: 60 log_chat turns, of which tool_calls keeps one in 50", async () => {
    const t = await newTenant();
    // The per-key limit is 40 calls a minute: two keys of the tenant, 30 turns each, in one JSON-RPC batch each.
    const second = await newKey(t.tenantId);
    const turns = (conversation: (i: number) => string) =>
      Array.from({ length: 30 }, (_, i) => ({
        jsonrpc: "2.0",
        method: "tools/call",
        params: {
          name: "log_chat",
          arguments: { conversation_id: conversation(i), role: "user", content: `turn ${i} on the ferry` },
        },
        id: i,
      }));
    for (const [apiKey, conversation] of [
      [t.apiKey, () => "busy"],
      [second.apiKey, (i: number) => (i < 25 ? "busy" : "quiet")],
    ] as const) {
      const replies = await (await jsonrpc(apiKey, turns(conversation))).json<RpcResponse[]>();
      expect(replies.filter((reply) => reply.error)).toEqual([]);
    }
    await untilLogged(t.tenantId, 60, "log_chat");
    const kept = await t.db
      .prepare("SELECT COUNT(*) AS n FROM tool_calls WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<number>("n");
    expect(kept).toBeLessThanOrEqual(Math.ceil(60 / SAMPLE_EVERY));

    const used = await call(t.apiKey, "get_tool_conversations", { tool_name: "log_chat" });
    expect(used).toMatchObject({
      total_conversations: 2,
      usage_statistics: { total_invocations: 60, average_per_conversation: 30 },
    });
    const counts = Object.fromEntries(used.conversations.map((c: any) => [c.conversation_id, c.usage_count]));
    expect(counts).toEqual({ busy: 55, quiet: 5 });
    const busy = used.conversations.find((c: any) => c.conversation_id === "busy");
    expect(Date.now() - Date.parse(busy.last_used)).toBeLessThan(60_000);
  });
});
