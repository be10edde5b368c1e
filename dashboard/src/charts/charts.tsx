import type { ComponentChildren } from "preact";
import { formatNumber } from "../ui";

// Hand-drawn SVG charts: a few hundred bytes of code each instead of a charting library. Each is a
// <figure> with a caption, a legend, an SVG with an accessible name, and its numbers in a table.

export const SERIES_COLORS = [
  "#2f7ed8",
  "#e4572e",
  "#29a36a",
  "#b04fc4",
  "#d99a00",
  "#17a2b8",
  "#7a6fd1",
  "#c2416b",
  "#5d8c2e",
  "#8d6e4a",
  "#4f6d7a",
  "#e07b39",
];
const color = (i: number) => SERIES_COLORS[i % SERIES_COLORS.length]!;

const W = 720;
const H = 240;
const PAD = { left: 52, right: 12, top: 12, bottom: 28 };
const PLOT_W = W - PAD.left - PAD.right;
const PLOT_H = H - PAD.top - PAD.bottom;

/** About four round steps from 0 to at least `max`. */
function ticks(max: number): number[] {
  if (max <= 0) return [0, 1];
  const raw = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let v = 0; v < max + step; v += step) out.push(v);
  return out;
}

function Frame({
  label,
  series,
  children,
  table,
}: {
  label: string;
  series: string[];
  children: ComponentChildren;
  table: ComponentChildren;
}) {
  return (
    <figure class="chart">
      <figcaption>{label}</figcaption>
      <ul class="legend" aria-label="Legend">
        {series.map((s, i) => (
          <li key={s}>
            <svg width="10" height="10" aria-hidden="true">
              <rect width="10" height="10" fill={color(i)} />
            </svg>
            {s}
          </li>
        ))}
      </ul>
      {children}
      <details>
        <summary>Data</summary>
        {table}
      </details>
    </figure>
  );
}

function YAxis({ scale, top }: { scale: number[]; top: number }) {
  return (
    <g class="axis">
      {scale.map((v) => {
        const y = PAD.top + PLOT_H - (v / top) * PLOT_H;
        return (
          <g key={v}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y} y2={y} class="grid-line" />
            <text x={PAD.left - 6} y={y + 4} text-anchor="end">
              {formatNumber(v)}
            </text>
          </g>
        );
      })}
    </g>
  );
}

function XLabels({ labels }: { labels: string[] }) {
  const every = Math.max(1, Math.ceil(labels.length / 8));
  const step = PLOT_W / Math.max(1, labels.length);
  return (
    <g class="axis">
      {labels.map((l, i) =>
        i % every === 0 ? (
          <text key={i} x={PAD.left + step * (i + 0.5)} y={H - 8} text-anchor="middle">
            {l}
          </text>
        ) : null,
      )}
    </g>
  );
}

function DataTable({ head, rows }: { head: string[]; rows: (string | number | null)[][] }) {
  return (
    <table class="grid">
      <thead>
        <tr>
          {head.map((h) => (
            <th scope="col" key={h}>
              {h}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i}>
            {r.map((c, j) => (
              <td key={j}>{c === null ? "—" : typeof c === "number" ? formatNumber(c) : c}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Columns over time, one stacked segment per series. */
export function StackedBars({
  label,
  xs,
  series,
  values,
}: {
  label: string;
  xs: string[];
  series: string[];
  values: number[][];
}) {
  const totals = values.map((column) => column.reduce((a, b) => a + b, 0));
  const scale = ticks(Math.max(0, ...totals));
  const top = scale[scale.length - 1]!;
  const step = PLOT_W / Math.max(1, xs.length);
  return (
    <Frame
      label={label}
      series={series}
      table={<DataTable head={["time", ...series]} rows={xs.map((x, i) => [x, ...values[i]!])} />}
    >
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`${label}: ${formatNumber(totals.reduce((a, b) => a + b, 0))} in all`}
      >
        <YAxis scale={scale} top={top} />
        {values.map((column, i) => {
          let y = PAD.top + PLOT_H;
          return (
            <g key={i}>
              {column.map((v, s) => {
                if (v === 0) return null;
                const h = (v / top) * PLOT_H;
                y -= h;
                return (
                  <rect
                    key={s}
                    x={PAD.left + step * i + step * 0.15}
                    y={y}
                    width={step * 0.7}
                    height={h}
                    fill={color(s)}
                  >
                    <title>{`${xs[i]} · ${series[s]}: ${formatNumber(v)}`}</title>
                  </rect>
                );
              })}
            </g>
          );
        })}
        <XLabels labels={xs} />
      </svg>
    </Frame>
  );
}

/** Lines over time; null values leave gaps. */
export function LineChart({
  label,
  xs,
  series,
  values,
  unit,
}: {
  label: string;
  xs: string[];
  series: string[];
  values: (number | null)[][];
  unit: string;
}) {
  const all = values.flat().filter((v): v is number => v !== null);
  const scale = ticks(Math.max(0, ...all));
  const top = scale[scale.length - 1]!;
  const step = PLOT_W / Math.max(1, xs.length);
  const point = (i: number, v: number) => `${PAD.left + step * (i + 0.5)},${PAD.top + PLOT_H - (v / top) * PLOT_H}`;
  return (
    <Frame
      label={label}
      series={series}
      table={
        <DataTable
          head={["time", ...series.map((s) => `${s} (${unit})`)]}
          rows={xs.map((x, i) => [x, ...values.map((line) => line[i] ?? null)])}
        />
      }
    >
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${label}, in ${unit}`}>
        <YAxis scale={scale} top={top} />
        {values.map((line, s) => {
          const runs: string[][] = [[]];
          line.forEach((v, i) => (v === null ? runs.push([]) : runs[runs.length - 1]!.push(point(i, v))));
          return (
            <g key={s}>
              {runs
                .filter((r) => r.length > 0)
                .map((r, k) =>
                  r.length === 1 ? (
                    <circle key={k} cx={r[0]!.split(",")[0]} cy={r[0]!.split(",")[1]} r="3" fill={color(s)} />
                  ) : (
                    <polyline key={k} points={r.join(" ")} fill="none" stroke={color(s)} stroke-width="2" />
                  ),
                )}
            </g>
          );
        })}
        <XLabels labels={xs} />
      </svg>
    </Frame>
  );
}

/** Horizontal bars, one row per label, stacked by series. */
export function HBarChart({
  label,
  rows,
  series,
}: {
  label: string;
  rows: { label: string; values: number[] }[];
  series: string[];
}) {
  const rowH = 26;
  const labelW = 160;
  const height = rows.length * rowH + 8;
  const max = Math.max(1, ...rows.map((r) => r.values.reduce((a, b) => a + b, 0)));
  const barW = W - labelW - 80;
  return (
    <Frame
      label={label}
      series={series}
      table={<DataTable head={["", ...series]} rows={rows.map((r) => [r.label, ...r.values])} />}
    >
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-label={label}>
        {rows.map((r, i) => {
          let x = labelW;
          const y = 4 + i * rowH;
          const total = r.values.reduce((a, b) => a + b, 0);
          return (
            <g key={r.label}>
              <text x={labelW - 8} y={y + 16} text-anchor="end" class="axis-label">
                {r.label.length > 22 ? `${r.label.slice(0, 21)}…` : r.label}
              </text>
              {r.values.map((v, s) => {
                const w = (v / max) * barW;
                const rect =
                  w > 0 ? (
                    <rect key={s} x={x} y={y + 3} width={w} height={rowH - 8} fill={color(s)}>
                      <title>{`${r.label} · ${series[s]}: ${formatNumber(v)}`}</title>
                    </rect>
                  ) : null;
                x += w;
                return rect;
              })}
              <text x={x + 6} y={y + 16} class="axis-label">
                {formatNumber(total)}
              </text>
            </g>
          );
        })}
      </svg>
    </Frame>
  );
}
