import { z } from "zod";
import type { UnitsReport, UnitsUsage, UnitTotals } from "../core/tenants/units-report";
import { R2_PRICES } from "../price-list";

/** A tool's or job kind's billable units: means per call (or run), and the p95 of D1's rows (docs/costs.md). */
export const unitFields = {
  d1_rows_read: z.number().describe("Mean D1 rows read (D1's own meta.rows_read, index entries included)"),
  d1_rows_read_p95: z.number().nullable().describe("p95 of D1 rows read per call, within ~2.5 %"),
  d1_rows_written: z.number().describe("Mean D1 rows written (each index entry a write touches is one more)"),
  d1_rows_written_p95: z.number().nullable(),
  kv_reads: z.number(),
  kv_writes: z.number(),
  kv_deletes: z.number(),
  kv_lists: z.number(),
  queue_sends: z.number().describe("Messages sent to queues, the usage log's included"),
  queue_operations: z
    .number()
    .describe(
      "Billed queue operations: each message's write, read and delete per 64 KB of it, retried deliveries, dead letters",
    ),
  ai_neurons: z.number().describe("Workers AI neurons, estimated from the model's published price"),
  local_rows_read: z.number().describe("Rows of local stand-ins (the D1 vector index): not billed in production"),
  local_rows_written: z.number(),
  r2_class_a: z.number().describe("R2 Class A operations on documents' originals (writes, lists)"),
  r2_class_b: z.number().describe("R2 Class B operations on documents' originals (reads)"),
  cpu_ms: z
    .number()
    .nullable()
    .describe(
      "Mean Worker CPU milliseconds, the platform's own count (the Worker tails itself); null when none was recorded",
    ),
};
export const nullableUnitFields = Object.fromEntries(Object.entries(unitFields).map(([k, v]) => [k, v.nullable()])) as {
  [K in keyof typeof unitFields]: z.ZodNullable<(typeof unitFields)[K]>;
};
export const planUnits = z.object({
  d1_rows_read: z.number(),
  d1_rows_written: z.number(),
  kv_reads: z.number(),
  kv_writes: z.number(),
  kv_deletes: z.number(),
  kv_lists: z.number(),
  queue_operations: z.number(),
  ai_neurons: z.number(),
});

export function unitOutput(u: UnitsUsage) {
  return {
    d1_rows_read: u.d1RowsRead,
    d1_rows_read_p95: u.d1RowsReadP95,
    d1_rows_written: u.d1RowsWritten,
    d1_rows_written_p95: u.d1RowsWrittenP95,
    kv_reads: u.kvReads,
    kv_writes: u.kvWrites,
    kv_deletes: u.kvDeletes,
    kv_lists: u.kvLists,
    queue_sends: u.queueSends,
    queue_operations: u.queueOperations,
    ai_neurons: u.aiNeurons,
    local_rows_read: u.localRowsRead,
    local_rows_written: u.localRowsWritten,
    r2_class_a: u.r2ClassA,
    r2_class_b: u.r2ClassB,
    cpu_ms: u.cpuMs,
  };
}

export const NO_UNITS = Object.fromEntries(Object.keys(unitFields).map((k) => [k, null])) as {
  [K in keyof typeof unitFields]: null;
};

export function planOutput(u: UnitTotals): z.infer<typeof planUnits> {
  return {
    d1_rows_read: u.d1RowsRead,
    d1_rows_written: u.d1RowsWritten,
    kv_reads: u.kvReads,
    kv_writes: u.kvWrites,
    kv_deletes: u.kvDeletes,
    kv_lists: u.kvLists,
    queue_operations: u.queueOperations,
    ai_neurons: u.aiNeurons,
  };
}

/** d1RowsRead -> d1_rows_read. */
export const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** What totalsOutput adds to the plan's daily units: R2's operations and CPU time, which are billed by the month. */
export const monthlyTotalFields = {
  r2_class_a: z
    .number()
    .describe(
      `R2 Class A operations over the period; R2's free tier is ${R2_PRICES.classA.freePerMonth.toLocaleString("en")} ` +
        `a month (Class B: ${R2_PRICES.classB.freePerMonth.toLocaleString("en")})`,
    ),
  r2_class_b: z.number(),
  cpu_ms: z.number().nullable().describe("Worker CPU milliseconds over the period; null when none was recorded"),
  cpu_ms_per_day: z.number().nullable(),
  paid_plan_cpu_ms_per_month: z
    .number()
    .describe("CPU ms Workers Paid includes a month (then billed); the Free plan limits each invocation to 10 ms"),
};

/** A report's totals as get_usage_report and GET /admin/usage answer them. */
export function totalsOutput(totals: UnitsReport["totals"]) {
  return {
    ...planOutput(totals.sum),
    local_rows_read: totals.sum.localRowsRead,
    local_rows_written: totals.sum.localRowsWritten,
    r2_class_a: totals.sum.r2ClassA,
    r2_class_b: totals.sum.r2ClassB,
    per_day: planOutput(totals.perDay),
    free_plan_daily: planOutput(totals.freePlanDaily),
    binding: totals.binding && { unit: snakeCase(totals.binding.unit), share: totals.binding.share },
    cpu_ms: totals.cpu.ms,
    cpu_ms_per_day: totals.cpu.perDay,
    paid_plan_cpu_ms_per_month: totals.cpu.paidIncludedPerMonth,
  };
}
