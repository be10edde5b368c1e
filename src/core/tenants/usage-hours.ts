import { type BillableUnits, noUnits } from "../../billable-units";
import type { JobRunRecord, ToolCallRecord } from "../../messages";
import { latencyBucket } from "./latency-histogram";

/** The units usage_hours keeps, with their columns. */
export const HOURLY_UNITS: readonly (readonly [keyof BillableUnits, string])[] = [
  ["d1RoundTrips", "d1_round_trips"],
  ["d1Ms", "d1_ms"],
  ["d1RowsRead", "d1_rows_read"],
  ["d1RowsWritten", "d1_rows_written"],
  ["localRowsRead", "local_rows_read"],
  ["localRowsWritten", "local_rows_written"],
  ["kvReads", "kv_reads"],
  ["kvWrites", "kv_writes"],
  ["kvDeletes", "kv_deletes"],
  ["kvLists", "kv_lists"],
  ["queueSends", "queue_sends"],
  ["queueOperations", "queue_operations"],
  ["aiNeurons", "ai_neurons"],
  ["r2ClassA", "r2_class_a"],
  ["r2ClassB", "r2_class_b"],
  ["cpuMs", "cpu_ms"],
  ["cpuCalls", "cpu_calls"],
];

const HOUR = 3_600_000;

/**
 * A value's bin for the p95 histograms: to 0.1 under 10 (a batched call's share of a row is a fraction), then powers
 * of 1.05 to 3 significant digits, so a percentile read from the bins is within ~2.5 % of the value.
 */
export function histogramBin(value: number): number {
  if (value < 10) return Math.round(Math.max(0, value) * 10) / 10;
  return Number((1.05 ** Math.round(Math.log(value) / Math.log(1.05))).toPrecision(3));
}

/** The value at rank ceil(p x n) of a histogram {bin: count} (nearest rank, as the latency percentiles). */
export function histogramPercentile(histogram: Record<string, number>, p: number): number | null {
  const bins = Object.entries(histogram)
    .map(([bin, count]) => [Number(bin), count] as const)
    .sort((a, b) => a[0] - b[0]);
  const n = bins.reduce((sum, [, count]) => sum + count, 0);
  if (n === 0) return null;
  const rank = Math.ceil(p * n);
  let seen = 0;
  for (const [bin, count] of bins) {
    seen += count;
    if (seen >= rank) return bin;
  }
  return bins[bins.length - 1]![0];
}

/** One usage_hours row being summed: a tenant's tool (or job kind) in one project and hour. */
export interface HourRow {
  tenantId: string;
  hour: number;
  source: "tool" | "job";
  name: string;
  project: string;
  calls: number;
  errors: number;
  units: BillableUnits;
  readHist: Map<number, number>;
  writtenHist: Map<number, number>;
  /** Tool calls' durations, and their durations less the D1 wait (the worker's own time), in latency buckets. */
  latencyHist: Map<number, number>;
  workerHist: Map<number, number>;
}

/** What one call or job adds to its hour's row. */
export interface HourEntry {
  tenantId: string;
  at: number;
  source: "tool" | "job";
  name: string;
  project: string | null;
  failed: boolean;
  units: BillableUnits;
  /** A tool call's server-side duration (ms); jobs have none. */
  durationMs?: number;
  /** Calls (or runs) the entry counts: 1 unless given; 0 for units added to them later (their CPU time, cpu-time.ts). */
  calls?: number;
}

export function toolEntry(tenantId: string, call: ToolCallRecord): HourEntry | null {
  // A call logged by a worker from before units were counted carries none.
  if (!call.units) return null;
  const { tool: name, project, startedAt: at, errorCode, units, durationMs } = call;
  return { tenantId, at, source: "tool", name, project, failed: errorCode !== null, units, durationMs };
}

export function jobEntry(tenantId: string, job: JobRunRecord): HourEntry {
  return {
    tenantId,
    at: job.startedAt,
    source: "job",
    name: job.job,
    project: null,
    failed: job.failed,
    units: job.units,
  };
}

/** Entries summed by tenant, hour, source, name and project. */
export function hourRows(entries: readonly HourEntry[]): HourRow[] {
  const rows = new Map<string, HourRow>();
  for (const entry of entries) {
    const hour = Math.floor(entry.at / HOUR) * HOUR;
    const project = entry.project ?? "";
    const key = JSON.stringify([entry.tenantId, hour, entry.source, entry.name, project]);
    let row = rows.get(key);
    if (!row) {
      const { tenantId, source, name } = entry;
      row = {
        tenantId,
        hour,
        source,
        name,
        project,
        calls: 0,
        errors: 0,
        units: noUnits(),
        readHist: new Map(),
        writtenHist: new Map(),
        latencyHist: new Map(),
        workerHist: new Map(),
      };
      rows.set(key, row);
    }
    // A record sent by a worker from before a unit was counted has none of it.
    for (const [name] of HOURLY_UNITS) row.units[name] += entry.units[name] ?? 0;
    const calls = entry.calls ?? 1;
    row.calls += calls;
    if (calls === 0) continue;
    if (entry.failed) row.errors++;
    count(row.readHist, histogramBin(entry.units.d1RowsRead));
    count(row.writtenHist, histogramBin(entry.units.d1RowsWritten));
    if (entry.durationMs !== undefined) {
      count(row.latencyHist, latencyBucket(entry.durationMs));
      count(row.workerHist, latencyBucket(Math.max(0, entry.durationMs - (entry.units.d1Ms ?? 0))));
    }
  }
  return [...rows.values()];
}

function count(histogram: Map<number, number>, bin: number): void {
  histogram.set(bin, (histogram.get(bin) ?? 0) + 1);
}

const COLUMNS = ["calls", "errors", ...HOURLY_UNITS.map(([, column]) => column)];
const mergedHistogram = (column: string) =>
  `${column} = (SELECT json_group_object(key, total) FROM (SELECT key, SUM(value) AS total FROM (
     SELECT key, value FROM json_each(usage_hours.${column}) UNION ALL SELECT key, value FROM json_each(excluded.${column})
   ) GROUP BY key))`;

const HISTOGRAMS = ["read_hist", "written_hist", "latency_hist", "worker_hist"];

/**
 * Adds the rows to usage_hours in one statement (the rows as one JSON parameter): a new hour's row is inserted, an
 * existing one summed into, its histograms merged bin by bin.
 */
export function addHourRows(d1: D1Database, rows: readonly HourRow[]): D1PreparedStatement {
  const keys = ["tenant_id", "hour", "source", "name", "project"];
  const all = [...keys, ...COLUMNS, ...HISTOGRAMS];
  const values = rows.map((row) => [
    row.tenantId,
    row.hour,
    row.source,
    row.name,
    row.project,
    row.calls,
    row.errors,
    ...HOURLY_UNITS.map(([name]) => row.units[name]),
    JSON.stringify(Object.fromEntries(row.readHist)),
    JSON.stringify(Object.fromEntries(row.writtenHist)),
    JSON.stringify(Object.fromEntries(row.latencyHist)),
    JSON.stringify(Object.fromEntries(row.workerHist)),
  ]);
  return d1
    .prepare(
      `INSERT INTO usage_hours (${all.join(", ")})
       SELECT ${all.map((_, i) => `j.value ->> ${i}`).join(", ")} FROM json_each(?) j WHERE true
       ON CONFLICT (${keys.join(", ")}) DO UPDATE SET
         ${COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")},
         ${HISTOGRAMS.map(mergedHistogram).join(", ")}`,
    )
    .bind(JSON.stringify(values));
}
