import { describe, expect, it } from "vitest";
import { noUnits } from "../src/billable-units";
import { LATENCY_BOUNDS_MS, latencyPercentile, mergeHistograms } from "../src/core/tenants/latency-histogram";
import { hourRows } from "../src/core/tenants/usage-hours";

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
