import type { BillableUnits } from "../../billable-units";
import { projectClause, type TenantScope } from "../../db/scope";
import { FREE_PLAN_DAILY, PAID_PLAN } from "../../price-list";
import { HOURLY_UNITS, histogramPercentile } from "./usage-hours";

/** Billable units of one tool or job kind over a period: each a mean per call (or run), and the p95 of D1's rows. */
export type UnitsUsage = Omit<BillableUnits, "d1RoundTrips" | "d1Ms" | "cpuMs" | "cpuCalls"> & {
  /** Mean Worker CPU milliseconds of the calls whose invocation's CPU time was recorded; null when none was. */
  cpuMs: number | null;
  name: string;
  calls: number;
  errors: number;
  d1RowsReadP95: number | null;
  d1RowsWrittenP95: number | null;
};

/** The plan's allowances a tenant's units are held against (requests are not: the log counts tool calls, not requests). */
const PLAN_UNITS = [
  "d1RowsRead",
  "d1RowsWritten",
  "kvReads",
  "kvWrites",
  "kvDeletes",
  "kvLists",
  "queueOperations",
  "aiNeurons",
] as const;

export type UnitTotals = Record<(typeof PLAN_UNITS)[number], number>;

export interface UnitsReport {
  tools: UnitsUsage[];
  jobs: UnitsUsage[];
  totals: {
    /** Summed over the period; R2's operations beside the daily allowances (R2's free tier is monthly). */
    sum: UnitTotals & { localRowsRead: number; localRowsWritten: number; r2ClassA: number; r2ClassB: number };
    /** Mean per day over the period's days. */
    perDay: UnitTotals;
    /** The Free plan's daily allowance of each. */
    freePlanDaily: UnitTotals;
    /** The allowance the tenant's mean day uses most of, and how much (1 = all of it). */
    binding: { unit: keyof UnitTotals; share: number } | null;
    /**
     * Worker CPU milliseconds, summed and per mean day (null when none was recorded: no tail consumer, or a local
     * run, where workerd reports 0), with Workers Paid's monthly inclusion; the Free plan has a limit per
     * invocation, not an allowance.
     */
    cpu: { ms: number | null; perDay: number | null; paidIncludedPerMonth: number };
  };
}

/**
 * The usage_hours rows of the period, per source and name (a project-limited key sees the rows of calls that named
 * one of its projects, as with the usage log).
 */
export function unitsStatement(scope: TenantScope, since: number): D1PreparedStatement {
  const own = projectClause(scope, "project");
  const sums = ["calls", "errors", ...HOURLY_UNITS.map(([, column]) => column)];
  return scope.d1
    .prepare(
      `SELECT source, name, ${sums.map((c) => `SUM(${c}) AS ${c}`).join(", ")},
         json_group_array(json(read_hist)) AS read_hists, json_group_array(json(written_hist)) AS written_hists
       FROM usage_hours WHERE tenant_id = ? AND hour >= ?${own.sql} GROUP BY source, name ORDER BY calls DESC, name`,
    )
    .bind(scope.tenantId, since - (since % 3_600_000), ...own.params);
}

type Row = Record<string, number | string>;

export function unitsReport(rows: readonly Row[], days: number): UnitsReport {
  const usages = rows.map((row) => ({ source: row.source as string, usage: unitsUsage(row) }));
  return {
    tools: usages.filter((u) => u.source === "tool").map((u) => u.usage),
    jobs: usages.filter((u) => u.source === "job").map((u) => u.usage),
    totals: unitTotals(rows, days),
  };
}

/** Rows of usage_hours sums (any grouping) summed, their mean day, and that day against the Free plan's allowances. */
export function unitTotals(rows: readonly Row[], days: number): UnitsReport["totals"] {
  const sumOf = (column: string) => rows.reduce((sum, row) => sum + Number(row[column] ?? 0), 0);
  const sum = {
    d1RowsRead: sumOf("d1_rows_read"),
    d1RowsWritten: sumOf("d1_rows_written"),
    kvReads: sumOf("kv_reads"),
    kvWrites: sumOf("kv_writes"),
    kvDeletes: sumOf("kv_deletes"),
    kvLists: sumOf("kv_lists"),
    queueOperations: sumOf("queue_operations"),
    aiNeurons: sumOf("ai_neurons"),
    localRowsRead: sumOf("local_rows_read"),
    localRowsWritten: sumOf("local_rows_written"),
    r2ClassA: sumOf("r2_class_a"),
    r2ClassB: sumOf("r2_class_b"),
  };
  const perDay = {} as UnitTotals;
  const freePlanDaily = {} as UnitTotals;
  let binding: UnitsReport["totals"]["binding"] = null;
  for (const unit of PLAN_UNITS) {
    freePlanDaily[unit] = FREE_PLAN_DAILY[unit];
    perDay[unit] = round(sum[unit] / days);
    const share = perDay[unit] / FREE_PLAN_DAILY[unit];
    if (share > 0 && (binding === null || share > binding.share)) binding = { unit, share: round(share, 4) };
  }
  const cpuMs = sumOf("cpu_calls") > 0 ? sumOf("cpu_ms") : null;
  const cpu = {
    ms: cpuMs === null ? null : round(cpuMs),
    perDay: cpuMs === null ? null : round(cpuMs / days),
    paidIncludedPerMonth: PAID_PLAN.workerCpuMs.includedPerMonth,
  };
  return { sum: roundAll(sum), perDay, freePlanDaily, binding, cpu };
}

function unitsUsage(row: Row): UnitsUsage {
  const calls = Number(row.calls);
  // A name whose hours hold only CPU time (a page served, no units) has no calls to share by.
  const mean = (column: string) => (calls > 0 ? round(Number(row[column]) / calls) : 0);
  const cpuCalls = Number(row.cpu_calls ?? 0);
  return {
    name: row.name as string,
    calls,
    errors: Number(row.errors),
    d1RowsRead: mean("d1_rows_read"),
    d1RowsReadP95: histogramPercentile(mergedHistograms(row.read_hists as string), 0.95),
    d1RowsWritten: mean("d1_rows_written"),
    d1RowsWrittenP95: histogramPercentile(mergedHistograms(row.written_hists as string), 0.95),
    kvReads: mean("kv_reads"),
    kvWrites: mean("kv_writes"),
    kvDeletes: mean("kv_deletes"),
    kvLists: mean("kv_lists"),
    queueSends: mean("queue_sends"),
    queueOperations: mean("queue_operations"),
    aiNeurons: mean("ai_neurons"),
    localRowsRead: mean("local_rows_read"),
    localRowsWritten: mean("local_rows_written"),
    r2ClassA: mean("r2_class_a"),
    r2ClassB: mean("r2_class_b"),
    cpuMs: cpuCalls > 0 ? round(Number(row.cpu_ms) / cpuCalls) : null,
  };
}

function mergedHistograms(json: string): Record<string, number> {
  const merged: Record<string, number> = {};
  for (const histogram of JSON.parse(json) as Record<string, number>[])
    for (const [bin, count] of Object.entries(histogram)) merged[bin] = (merged[bin] ?? 0) + count;
  return merged;
}

function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

function roundAll<T extends Record<string, number>>(values: T): T {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, round(v)])) as T;
}

/** The report with snake_case keys, as the admin API answers (d1RowsRead -> d1_rows_read). */
export function snakeCaseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCaseKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeCaseKeys(v)]),
  );
}
