// Write throughput with 1k and 10k items in one tenant, embedding drain rate, and search latency at 10k.
import { loadMsmarco } from "./data.mjs";
import { fmt, percentile } from "./metrics.mjs";

export async function runScale(newTenant) {
  const { corpus, queries } = loadMsmarco();
  const tenant = await newTenant("scale");
  const texts = Array.from(
    { length: 10_000 },
    (_, i) =>
      `${corpus[i % corpus.length].text}${i >= corpus.length ? ` (copy ${Math.floor(i / corpus.length)})` : ""}`,
  );
  const windows = [];
  let windowStart = performance.now();
  const started = windowStart;
  for (let i = 0; i < texts.length; i += 100) {
    await tenant.call("memory_batch_store", {
      namespace: "scale",
      memories: texts.slice(i, i + 100).map((content) => ({ content })),
    });
    if ((i + 100) % 1000 === 0) {
      windows.push(1000 / ((performance.now() - windowStart) / 1000));
      windowStart = performance.now();
    }
  }
  const writeSeconds = (performance.now() - started) / 1000;
  const embedSeconds = await tenant.drainEmbeddings();
  const latency = { hybrid: [], keyword: [] };
  for (const mode of ["hybrid", "keyword"]) {
    for (const q of queries)
      latency[mode].push((await tenant.call("search", { query: q.text, project: "scale", limit: 10, mode })).ms);
  }
  return [
    `Scale: 10,000 items in one tenant (memory_batch_store, 100 per call)`,
    `  write throughput: ${fmt(windows[0], 0)} items/s for the first 1k, ${fmt(windows.at(-1), 0)} items/s for items 9k-10k (${fmt(10_000 / writeSeconds, 0)} items/s overall)`,
    `  every 1k: ${windows.map((w) => fmt(w, 0)).join(", ")} items/s`,
    `  embedding (queue consumer, local embedder + D1 vector index): all 10k embedded ${fmt(embedSeconds, 1)} s after the last write`,
    `  search latency at 10k items: hybrid p50 ${fmt(percentile(latency.hybrid, 50))} ms, p95 ${fmt(percentile(latency.hybrid, 95))} ms; keyword p50 ${fmt(percentile(latency.keyword, 50))} ms, p95 ${fmt(percentile(latency.keyword, 95))} ms`,
  ];
}
