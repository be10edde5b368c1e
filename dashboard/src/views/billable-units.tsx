import { HBarChart } from "../charts/charts";
import { formatNumber, Section } from "../ui";

/** One tool's or job kind's units, as get_usage_report gives them (null: none of its calls were counted). */
export interface UnitRow {
  d1_rows_read: number | null;
  d1_rows_read_p95: number | null;
  d1_rows_written: number | null;
  d1_rows_written_p95: number | null;
  kv_reads: number | null;
  kv_writes: number | null;
  queue_sends: number | null;
  ai_neurons: number | null;
  local_rows_written: number | null;
  /** Mean Worker CPU ms of the calls whose invocation's time was recorded (null: none was). */
  cpu_ms: number | null;
}

export interface UnitTotals {
  per_day: Record<string, number>;
  free_plan_daily: Record<string, number>;
  binding: { unit: string; share: number } | null;
  cpu_ms: number | null;
  cpu_ms_per_day: number | null;
  paid_plan_cpu_ms_per_month: number;
}

const UNIT_LABELS: Record<string, string> = {
  d1_rows_read: "D1 rows read",
  d1_rows_written: "D1 rows written",
  kv_reads: "KV reads",
  kv_writes: "KV writes",
  kv_deletes: "KV deletes",
  kv_lists: "KV lists",
  queue_operations: "Queue operations",
  ai_neurons: "Workers AI neurons",
};

const shown = (value: number | null) => (value === null ? "–" : formatNumber(value));

/** What Cloudflare bills: a mean day against the Free plan, then each tool's and job's units per call. */
export function BillableUnits({
  rows,
  totals,
}: {
  rows: (UnitRow & { name: string; calls: number; kind: "tool" | "job" })[];
  totals: UnitTotals;
}) {
  const units = Object.keys(totals.free_plan_daily);
  return (
    <Section title="What Cloudflare bills">
      <p class="muted">
        {totals.binding
          ? `A mean day of this period uses ${formatNumber(totals.binding.share * 100)} % of the Free plan's ` +
            `${UNIT_LABELS[totals.binding.unit] ?? totals.binding.unit}, the allowance it comes closest to.`
          : "Nothing billed in this period yet."}{" "}
        Rows are D1's own counts; local stand-ins' rows (the vector index in D1) are not billed in production.
      </p>
      <p class="muted">
        {totals.cpu_ms_per_day === null
          ? "Worker CPU time: none recorded in this period (it comes from the Worker's tail consumer, which local runs leave out)."
          : `Worker CPU time: ${formatNumber(totals.cpu_ms_per_day)} ms a mean day; Workers Paid includes ` +
            `${formatNumber(totals.paid_plan_cpu_ms_per_month)} ms a month.`}
      </p>
      <HBarChart
        label="Share of the Free plan's daily allowance, per mean day (%)"
        rows={units.map((unit) => ({
          label: UNIT_LABELS[unit] ?? unit,
          values: [Math.min(100, ((totals.per_day[unit] ?? 0) / totals.free_plan_daily[unit]!) * 100)],
        }))}
        series={["% of the daily allowance"]}
      />
      <table class="grid">
        <caption class="muted">Per call or job run: means, and p95 of D1's rows</caption>
        <thead>
          <tr>
            <th scope="col">Tool or job</th>
            <th scope="col">Calls</th>
            <th scope="col">D1 rows read</th>
            <th scope="col">p95</th>
            <th scope="col">D1 rows written</th>
            <th scope="col">p95</th>
            <th scope="col">KV reads</th>
            <th scope="col">KV writes</th>
            <th scope="col">Queue messages</th>
            <th scope="col">Neurons</th>
            <th scope="col">Local rows written</th>
            <th scope="col">CPU ms</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={`${r.kind}:${r.name}`}>
              <td>{r.kind === "job" ? `${r.name} (job)` : r.name}</td>
              <td>{formatNumber(r.calls)}</td>
              <td>{shown(r.d1_rows_read)}</td>
              <td>{shown(r.d1_rows_read_p95)}</td>
              <td>{shown(r.d1_rows_written)}</td>
              <td>{shown(r.d1_rows_written_p95)}</td>
              <td>{shown(r.kv_reads)}</td>
              <td>{shown(r.kv_writes)}</td>
              <td>{shown(r.queue_sends)}</td>
              <td>{shown(r.ai_neurons)}</td>
              <td>{shown(r.local_rows_written)}</td>
              <td>{shown(r.cpu_ms)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}
