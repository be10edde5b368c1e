// Auto-link queue throughput over 10k items, and get_document_relationships at depth 3 on a graph of
// 10k edges (plus whatever auto-link added).
import { loadMsmarco } from "./data.mjs";
import { fmt, percentile } from "./metrics.mjs";
import { sleep } from "./worker.mjs";

const RELATIONSHIPS = ["related_to", "depends_on", "references", "part_of"];

export async function runGraph(newTenant) {
  const { corpus } = loadMsmarco();
  const tenant = await newTenant("graph");
  const ids = [];
  const started = performance.now();
  for (let i = 0; i < 10_000; i += 100) {
    const memories = Array.from({ length: 100 }, (_, j) => {
      const n = i + j;
      return {
        content: `${corpus[n % corpus.length].text}${n >= corpus.length ? ` (copy ${Math.floor(n / corpus.length)})` : ""}`,
      };
    });
    ids.push(...(await tenant.call("memory_batch_store", { namespace: "graph", memories })).result.ids);
  }
  const written = performance.now();
  await tenant.drainEmbeddings();
  const embedded = performance.now();
  for (;;) {
    if ((await tenant.stats()).pending_links === 0) break;
    await sleep(500);
  }
  const linked = performance.now();

  // A random graph of 10k edges (seeded, reproducible).
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const edges = [];
  while (edges.length < 10_000) {
    const a = ids[Math.floor(next() * ids.length)];
    const b = ids[Math.floor(next() * ids.length)];
    if (a !== b)
      edges.push([
        "link_resources",
        {
          source_id: a,
          target_id: b,
          relationship_type: RELATIONSHIPS[edges.length % 4],
          weight: Math.round((0.5 + next() / 2) * 100) / 100,
        },
      ]);
  }
  await tenant.callMany(edges);
  const latency = [];
  let reached = 0;
  for (let i = 0; i < 100; i++) {
    const { result, ms } = await tenant.call("get_document_relationships", {
      document_id: ids[Math.floor(next() * ids.length)],
      max_depth: 3,
    });
    latency.push(ms);
    reached += result.total_relationships;
  }
  const seconds = (a, b) => (b - a) / 1000;
  return [
    `Graph: 10,000 items in one namespace`,
    `  auto-link (queue: embed job, then link job; local embedder + D1 vector index): all linked ${fmt(seconds(started, linked), 1)} s after the first write ` +
      `(${fmt(10_000 / seconds(started, linked), 0)} items/s end to end; writes ${fmt(seconds(started, written), 1)} s, embedding drained at ${fmt(seconds(started, embedded), 1)} s, ` +
      `linking drained ${fmt(seconds(embedded, linked), 1)} s later)`,
    `  get_document_relationships, max_depth 3, random graph of 10,000 edges: p50 ${fmt(percentile(latency, 50))} ms, p95 ${fmt(percentile(latency, 95))} ms ` +
      `(${fmt(reached / 100, 1)} documents reached on average)`,
  ];
}
