import { projectClause, type TenantScope } from "../../db/scope";
import { type ExtractionUsage, extractionUsage, extractionUsageStatements } from "../extraction/extraction-usage";
import { latencyPercentile, mergeHistograms } from "./latency-histogram";
import { type QuotaReport, quotaReport, quotaReportStatements, type TenantLimits } from "./quotas";
import { type UnitsReport, type UnitsUsage, unitsReport, unitsStatement } from "./units-report";

/**
 * Usage over time from the usage log's hourly aggregates (usage_hours), for charts: calls per tool in fixed time
 * buckets, latency percentiles (server-side duration, from the hours' fixed-bucket histograms) per bucket and per
 * tool, errors, D1 round trips and the worker's own time per tool, and what each
 * project stores. A project-limited key sees the calls that named one of its projects and its projects'
 * storage only, as get_context_metrics does. The tenant's quotas come with their tenant-wide usage (what a
 * refused write names to any key).
 */

export type UsagePeriod = "day" | "week" | "month";

const HOUR = 3_600_000;
export const USAGE_PERIODS: Record<UsagePeriod, { spanMs: number; bucketMs: number; days: number }> = {
  day: { spanMs: 24 * HOUR, bucketMs: HOUR, days: 1 },
  week: { spanMs: 7 * 24 * HOUR, bucketMs: 6 * HOUR, days: 7 },
  month: { spanMs: 30 * 24 * HOUR, bucketMs: 24 * HOUR, days: 30 },
};

export interface UsageBucket {
  start: number;
  calls: Record<string, number>;
  errors: number;
  p50Ms: number | null;
  p95Ms: number | null;
}

export interface ToolUsage {
  tool: string;
  calls: number;
  errors: number;
  /** From the hours' latency histograms (latency-histogram.ts); null for hours logged before they were kept. */
  p50Ms: number | null;
  p95Ms: number | null;
  /** Mean D1 round trips per call and mean time waiting on them; null when none of its calls were counted. */
  d1RoundTrips: number | null;
  d1Ms: number | null;
  /** Percentiles of each call's duration less its D1 wait: the worker's own time (CPU and other I/O). */
  workerP50Ms: number | null;
  workerP95Ms: number | null;
  /** Its billable units (usage_hours); null when none of its calls were counted. */
  units: UnitsUsage | null;
}

export interface ProjectStorage {
  project: string;
  items: number;
  tokens: number;
  stashedTokens: number;
}

export interface UsageReport {
  since: number;
  bucketMs: number;
  buckets: UsageBucket[];
  tools: ToolUsage[];
  totalCalls: number;
  projects: ProjectStorage[];
  quotas: QuotaReport;
  extraction: ExtractionUsage;
  /** Billable units by job kind, and the period's totals against the Free plan. */
  jobs: UnitsUsage[];
  totals: UnitsReport["totals"];
}

/** A tool's hour in usage_hours: what the report sums into its buckets and tools. */
interface ToolHour {
  hour: number;
  name: string;
  calls: number;
  errors: number;
  d1_round_trips: number;
  d1_ms: number;
  latency_hist: string;
  worker_hist: string;
}

/** A sum of tool hours: calls, errors, D1's trips and wait, and the two latency histograms merged. */
class ToolSum {
  calls = 0;
  errors = 0;
  trips = 0;
  d1Ms = 0;
  private readonly latency: Record<string, number>[] = [];
  private readonly worker: Record<string, number>[] = [];

  add(row: ToolHour): void {
    this.calls += row.calls;
    this.errors += row.errors;
    this.trips += row.d1_round_trips;
    this.d1Ms += row.d1_ms;
    this.latency.push(JSON.parse(row.latency_hist));
    this.worker.push(JSON.parse(row.worker_hist));
  }

  percentile(p: number, of: "latency" | "worker" = "latency"): number | null {
    const value = latencyPercentile(mergeHistograms(of === "latency" ? this.latency : this.worker), p);
    return value === null ? null : round(value);
  }
}

export async function usageReport(
  scope: TenantScope,
  period: UsagePeriod,
  limits: TenantLimits,
  now = Date.now(),
): Promise<UsageReport> {
  const { spanMs, bucketMs, days } = USAGE_PERIODS[period];
  const since = Math.floor((now - spanMs) / bucketMs + 1) * bucketMs;
  const own = projectClause(scope, "project");
  const [toolHours, storage, hourly, windows, deferral, ...quotas] = await scope.d1.batch<
    Record<string, string | number | null>
  >([
    // The tools' hours of the period (a row a tool, hour and project): the aggregates, never a row a call.
    scope.d1
      .prepare(
        `SELECT hour, name, calls, errors, d1_round_trips, d1_ms, latency_hist, worker_hist FROM usage_hours
         WHERE tenant_id = ? AND hour >= ? AND source = 'tool'${own.sql}`,
      )
      .bind(scope.tenantId, since, ...own.params),
    scope.d1
      .prepare(
        `SELECT project, COUNT(*) AS items, COALESCE(SUM(tokens), 0) AS tokens, COALESCE(SUM(CASE WHEN tier = 'stashed' THEN tokens ELSE 0 END), 0) AS stashed
         FROM items WHERE tenant_id = ?${own.sql} GROUP BY project ORDER BY tokens DESC, project`,
      )
      .bind(scope.tenantId, ...own.params),
    unitsStatement(scope, since),
    ...extractionUsageStatements(scope, since),
    ...quotaReportStatements(scope.d1, scope.tenantId, now),
  ]);
  const bucketSums = new Map<number, { calls: Record<string, number>; sum: ToolSum }>();
  const toolSums = new Map<string, ToolSum>();
  for (const row of toolHours!.results as unknown as ToolHour[]) {
    const start = Math.floor(row.hour / bucketMs) * bucketMs;
    const bucket = bucketSums.get(start) ?? bucketSums.set(start, { calls: {}, sum: new ToolSum() }).get(start)!;
    bucket.calls[row.name] = (bucket.calls[row.name] ?? 0) + row.calls;
    bucket.sum.add(row);
    (toolSums.get(row.name) ?? toolSums.set(row.name, new ToolSum()).get(row.name)!).add(row);
  }
  const buckets: UsageBucket[] = [];
  for (let start = since; start <= now; start += bucketMs) {
    const b = bucketSums.get(start);
    buckets.push({
      start,
      calls: b?.calls ?? {},
      errors: b?.sum.errors ?? 0,
      p50Ms: b?.sum.percentile(0.5) ?? null,
      p95Ms: b?.sum.percentile(0.95) ?? null,
    });
  }
  const units = unitsReport(hourly!.results as Record<string, string | number>[], days);
  const toolUnits = new Map(units.tools.map((u) => [u.name, u]));
  const tools = [...toolSums]
    .sort(([a, x], [b, y]) => y.calls - x.calls || (a < b ? -1 : 1))
    .map(([tool, sum]) => ({
      tool,
      calls: sum.calls,
      errors: sum.errors,
      p50Ms: sum.percentile(0.5),
      p95Ms: sum.percentile(0.95),
      d1RoundTrips: sum.calls === 0 ? null : round(sum.trips / sum.calls),
      d1Ms: sum.calls === 0 ? null : round(sum.d1Ms / sum.calls),
      workerP50Ms: sum.percentile(0.5, "worker"),
      workerP95Ms: sum.percentile(0.95, "worker"),
      units: toolUnits.get(tool) ?? null,
    }));
  return {
    since,
    bucketMs,
    buckets,
    tools,
    totalCalls: tools.reduce((sum, t) => sum + t.calls, 0),
    projects: storage!.results.map((r) => ({
      project: r.project as string,
      items: r.items as number,
      tokens: r.tokens as number,
      stashedTokens: r.stashed as number,
    })),
    quotas: quotaReport(limits, quotas, now),
    extraction: extractionUsage([windows!, deferral!], now),
    jobs: units.jobs,
    totals: units.totals,
  };
}

/**
 * To 0.01: a call in a JSON-RPC batch of 50 carries 1/50 of its batch's time and round trips (2 trips are
 * 0.04 a call), which a round to 0.1 would make 0.0.
 */
function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
