/**
 * The fixed latency buckets of usage_hours (ms, each a bucket's upper bound; the last holds everything above): about
 * 1.5x apart, so an hour's row holds at most 29 counts whatever its calls, and a percentile read from them, interpolated
 * within its bucket, is off by at most the bucket's width.
 */
export const LATENCY_BOUNDS_MS = [
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1_000, 1_500, 2_000, 3_000, 5_000, 7_000, 10_000,
  15_000, 20_000, 30_000, 60_000, 120_000,
] as const;

/** The bucket (its upper bound) a duration falls in. */
export function latencyBucket(ms: number): number {
  return LATENCY_BOUNDS_MS.find((bound) => ms <= bound) ?? LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

/**
 * The p-quantile of a latency histogram {upper bound: count}: the bucket holding rank ceil(p x n), interpolated
 * linearly between its bounds by the rank's place among its counts (as Prometheus' histogram_quantile). null when empty.
 */
export function latencyPercentile(histogram: Record<string, number>, p: number): number | null {
  const bins = Object.entries(histogram)
    .map(([bound, count]) => [Number(bound), count] as const)
    .filter(([, count]) => count > 0)
    .sort((a, b) => a[0] - b[0]);
  const n = bins.reduce((sum, [, count]) => sum + count, 0);
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil(p * n));
  let seen = 0;
  for (const [bound, count] of bins) {
    if (seen + count >= rank) {
      const index = LATENCY_BOUNDS_MS.indexOf(bound as (typeof LATENCY_BOUNDS_MS)[number]);
      const lower = index > 0 ? LATENCY_BOUNDS_MS[index - 1]! : 0;
      return lower + (bound - lower) * ((rank - seen) / count);
    }
    seen += count;
  }
  return bins[bins.length - 1]![0];
}

/** Histograms {bound: count} summed bin by bin (a period's hours, or one bucket's). */
export function mergeHistograms(histograms: readonly Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const histogram of histograms)
    for (const [bound, count] of Object.entries(histogram)) out[bound] = (out[bound] ?? 0) + count;
  return out;
}
