import { useState } from "preact/hooks";
import { callTool, type Session } from "../api";
import { HBarChart, LineChart, StackedBars } from "../charts/charts";
import { ErrorNote, formatNumber, Loading, Section, useAsync } from "../ui";
import { BillableUnits, type UnitRow, type UnitTotals } from "./billable-units";

interface Report {
  period: string;
  bucket_ms: number;
  buckets: {
    start: string;
    calls: Record<string, number>;
    errors: number;
    p50_ms: number | null;
    p95_ms: number | null;
  }[];
  tools: (UnitRow & { tool: string; calls: number; errors: number; p50_ms: number | null; p95_ms: number | null })[];
  jobs: (UnitRow & { job: string; runs: number })[];
  totals: UnitTotals;
  total_calls: number;
  projects: { project: string; items: number; tokens: number; stashed_tokens: number }[];
}

/** Most tools drawn as their own series; the rest are summed as "other tools". */
const MAX_SERIES = 8;

function bucketLabel(iso: string, bucketMs: number): string {
  const d = new Date(iso);
  return bucketMs >= 86_400_000
    ? d.toLocaleDateString(undefined, { month: "short", day: "numeric" })
    : d.toLocaleString(undefined, {
        weekday: bucketMs > 3_600_000 ? "short" : undefined,
        hour: "2-digit",
        minute: "2-digit",
      });
}

/**
 * Tool calls over time per tool, latency p50/p95, tokens stored per project, and what Cloudflare bills for the
 * tools and jobs: one get_usage_report call.
 */
export function UsageView({ session }: { session: Session }) {
  const [period, setPeriod] = useState("day");
  const report = useAsync(() => callTool<Report>(session.key, "get_usage_report", { period }), [session.key, period]);
  const r = report.data;
  const named = r ? r.tools.slice(0, MAX_SERIES).map((t) => t.tool) : [];
  const series = r && r.tools.length > MAX_SERIES ? [...named, "other tools"] : named;
  const xs = r ? r.buckets.map((b) => bucketLabel(b.start, r.bucket_ms)) : [];
  return (
    <>
      <h1>Usage</h1>
      <div class="field inline">
        <label for="usage-period">Period</label>
        <select id="usage-period" value={period} onChange={(e) => setPeriod(e.currentTarget.value)}>
          <option value="day">Last 24 hours</option>
          <option value="week">Last 7 days</option>
          <option value="month">Last 30 days</option>
        </select>
      </div>
      <ErrorNote error={report.error} />
      <Loading when={report.loading && !r} />
      {r && (
        <>
          <p class="muted">
            {formatNumber(r.total_calls)} tool calls in the period (the dashboard's own calls included).
          </p>
          <Section title="Tool calls over time">
            <StackedBars
              label="Tool calls per tool"
              xs={xs}
              series={series}
              values={r.buckets.map((b) => {
                const own = named.map((t) => b.calls[t] ?? 0);
                const rest = Object.entries(b.calls).reduce(
                  (sum, [tool, n]) => (named.includes(tool) ? sum : sum + n),
                  0,
                );
                return series.length > named.length ? [...own, rest] : own;
              })}
            />
          </Section>
          <Section title="Latency">
            <LineChart
              label="Server-side latency per call, p50 and p95"
              xs={xs}
              series={["p50", "p95"]}
              unit="ms"
              values={[r.buckets.map((b) => b.p50_ms), r.buckets.map((b) => b.p95_ms)]}
            />
          </Section>
          <Section title="Tokens stored per project">
            {r.projects.length === 0 ? (
              <p class="muted">Nothing stored yet.</p>
            ) : (
              <HBarChart
                label="Tokens stored per project"
                rows={r.projects.map((p) => ({
                  label: p.project,
                  values: [p.tokens - p.stashed_tokens, p.stashed_tokens],
                }))}
                series={["working set", "stashed"]}
              />
            )}
          </Section>
          <Section title="Per tool">
            <table class="grid">
              <thead>
                <tr>
                  <th scope="col">Tool</th>
                  <th scope="col">Calls</th>
                  <th scope="col">Errors</th>
                  <th scope="col">p50 (ms)</th>
                  <th scope="col">p95 (ms)</th>
                </tr>
              </thead>
              <tbody>
                {r.tools.map((t) => (
                  <tr key={t.tool}>
                    <td>{t.tool}</td>
                    <td>{formatNumber(t.calls)}</td>
                    <td>{formatNumber(t.errors)}</td>
                    <td>{t.p50_ms === null ? "–" : formatNumber(t.p50_ms)}</td>
                    <td>{t.p95_ms === null ? "–" : formatNumber(t.p95_ms)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Section>
          <BillableUnits
            rows={[
              ...r.tools.map((t) => ({ ...t, name: t.tool, kind: "tool" as const })),
              ...r.jobs.map((j) => ({ ...j, name: j.job, calls: j.runs, kind: "job" as const })),
            ]}
            totals={r.totals}
          />
        </>
      )}
    </>
  );
}
