export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function mean(values) {
  return values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

/** Share of the relevant ids found in the first k ranked ids. */
export function recallAt(ranked, relevant, k) {
  const top = new Set(ranked.slice(0, k));
  let hit = 0;
  for (const id of relevant) if (top.has(id)) hit++;
  return relevant.size === 0 ? NaN : hit / relevant.size;
}

/** nDCG@k with graded relevance (gain 2^rel - 1). */
export function ndcgAt(ranked, grades, k) {
  const dcg = ranked.slice(0, k).reduce((sum, id, i) => sum + (2 ** (grades.get(id) ?? 0) - 1) / Math.log2(i + 2), 0);
  const ideal = [...grades.values()]
    .sort((a, b) => b - a)
    .slice(0, k)
    .reduce((sum, g, i) => sum + (2 ** g - 1) / Math.log2(i + 2), 0);
  return ideal === 0 ? NaN : dcg / ideal;
}

/** Unique ids in rank order (several chunks can point at one record). */
export function uniqueInOrder(ids) {
  return [...new Set(ids)];
}

export const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
export const pct = (n) => fmt(n * 100, 1);
