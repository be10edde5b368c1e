import { projectClause, type TenantScope } from "../../db/scope";
import { type ExtractionUsage, extractionUsage, extractionUsageStatements } from "../extraction/extraction-usage";
import { type QuotaReport, quotaReport, quotaReportStatements, type TenantLimits } from "./quotas";
import { type UnitsReport, type UnitsUsage, unitsReport, unitsStatement } from "./units-report";

/**
 * Usage over time from the usage log, for charts: calls per tool in fixed time buckets, latency
 * percentiles (nearest rank, server-side duration of each call) per bucket and per tool, D1 round trips and
 * the worker's own time per tool, and what each
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
  p50Ms: number;
  p95Ms: number;
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

/** p50 and p95 of `value` by nearest rank over `partition` (rank = ceil(p x n), in integers). */
const percentiles = (partition: string, where: string, value = "duration_ms") => `
  WITH ranked AS (
    SELECT ${partition} AS k, ${value} AS d, error_code, d1_round_trips AS trips, d1_ms,
      ROW_NUMBER() OVER (PARTITION BY ${partition} ORDER BY ${value}) AS rn, COUNT(*) OVER (PARTITION BY ${partition}) AS n
    FROM tool_calls WHERE ${where}
  )
  SELECT k, MAX(n) AS n, SUM(error_code IS NOT NULL) AS errors, AVG(trips) AS trips, AVG(d1_ms) AS d1_ms,
    MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN d END) AS p50, MAX(CASE WHEN rn = (n * 95 + 99) / 100 THEN d END) AS p95
  FROM ranked GROUP BY k`;

export async function usageReport(
  scope: TenantScope,
  period: UsagePeriod,
  limits: TenantLimits,
  now = Date.now(),
): Promise<UsageReport> {
  const { spanMs, bucketMs, days } = USAGE_PERIODS[period];
  const since = Math.floor((now - spanMs) / bucketMs + 1) * bucketMs;
  const own = projectClause(scope, "project");
  const where = `tenant_id = ? AND started_at >= ?${own.sql}`;
  const bucket = `CAST(started_at / ${bucketMs} AS INTEGER)`;
  const args = [scope.tenantId, since, ...own.params];
  const [perToolBucket, perBucket, perTool, workerTime, storage, hourly, windows, deferral, ...quotas] =
    await scope.d1.batch<Record<string, string | number | null>>([
      scope.d1
        .prepare(`SELECT ${bucket} AS k, tool, COUNT(*) AS n FROM tool_calls WHERE ${where} GROUP BY k, tool`)
        .bind(...args),
      scope.d1.prepare(percentiles(bucket, where)).bind(...args),
      scope.d1.prepare(`${percentiles("tool", where)} ORDER BY n DESC, k`).bind(...args),
      scope.d1.prepare(percentiles("tool", `${where} AND d1_ms IS NOT NULL`, "duration_ms - d1_ms")).bind(...args),
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
  const buckets = new Map<number, UsageBucket>();
  for (let start = since; start <= now; start += bucketMs)
    buckets.set(start, { start, calls: {}, errors: 0, p50Ms: null, p95Ms: null });
  const at = (k: number) => buckets.get(k * bucketMs);
  for (const r of perToolBucket!.results) {
    const b = at(r.k as number);
    if (b) b.calls[r.tool as string] = r.n as number;
  }
  for (const r of perBucket!.results) {
    const b = at(r.k as number);
    if (!b) continue;
    b.errors = r.errors as number;
    b.p50Ms = round(r.p50 as number);
    b.p95Ms = round(r.p95 as number);
  }
  const worker = new Map(workerTime!.results.map((r) => [r.k as string, r]));
  const units = unitsReport(hourly!.results as Record<string, string | number>[], days);
  const toolUnits = new Map(units.tools.map((u) => [u.name, u]));
  const tools = perTool!.results.map((r) => ({
    tool: r.k as string,
    calls: r.n as number,
    errors: r.errors as number,
    p50Ms: round(r.p50 as number),
    p95Ms: round(r.p95 as number),
    d1RoundTrips: nullableRound(r.trips),
    d1Ms: nullableRound(r.d1_ms),
    workerP50Ms: nullableRound(worker.get(r.k as string)?.p50),
    workerP95Ms: nullableRound(worker.get(r.k as string)?.p95),
    units: toolUnits.get(r.k as string) ?? null,
  }));
  return {
    since,
    bucketMs,
    buckets: [...buckets.values()],
    tools,
    totalCalls: tools.reduce((sum, t) => sum + t.calls, 0),
    projects: storage!.results.map((r) => ({
      project: r.project as string,
      items: r.items as number,
      tokens: r.tokens as number,
      stashedTokens: r.stashed as number,
    })),
    quotas: quotaReport(limits, quotas),
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

function nullableRound(value: string | number | null | undefined): number | null {
  return typeof value === "number" ? round(value) : null;
}
