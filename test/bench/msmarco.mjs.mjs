// MS MARCO sample: 5,000 passages stored with memory_batch_store, 50 queries with graded qrels;
// nDCG@10 and recall@10 for hybrid and plain FTS5 BM25 (search mode "keyword").
import { loadMsmarco } from "./data.mjs";
import { fmt, mean, ndcgAt, percentile, recallAt, uniqueInOrder } from "./metrics.mjs";

export async function runMsmarco(newTenant) {
  const { corpus, queries, qrels } = loadMsmarco();
  const tenant = await newTenant("msmarco");
  const corpusIdsByItem = new Map();
  const started = performance.now();
  for (let i = 0; i < corpus.length; i += 100) {
    const slice = corpus.slice(i, i + 100);
    const { result } = await tenant.call("memory_batch_store", { namespace: "msmarco", memories: slice.map((p) => ({ content: p.title ? `${p.title}\n${p.text}` : p.text, type: "document" })) });
    result.ids.forEach((id, j) => corpusIdsByItem.set(id, [...(corpusIdsByItem.get(id) ?? []), slice[j]._id]));
  }
  const ingestSeconds = (performance.now() - started) / 1000;
  const embedSeconds = await tenant.drainEmbeddings();

  const lines = [`MS MARCO sample: ${corpus.length} passages, ${queries.length} queries (graded qrels)`];
  lines.push(`  ingest (memory_batch_store, 100 per call): ${fmt(corpus.length / ingestSeconds, 0)} items/s; embedding drained ${fmt(embedSeconds, 1)} s after the last write`);
  // Passages are standalone memories without tags or paths, so keyword mode here is plain FTS5 BM25.
  for (const [mode, label] of [["hybrid", "hybrid search (default)"], ["keyword", "plain FTS5 BM25"], ["vector", "vector only (local)"]]) {
    const ndcg = [];
    const recall = [];
    const latency = [];
    for (const q of queries) {
      const { result, ms } = await tenant.call("search", { query: q.text, project: "msmarco", limit: 10, mode });
      latency.push(ms);
      const ranked = uniqueInOrder(result.results.flatMap((r) => corpusIdsByItem.get(r.item_id) ?? []));
      const grades = qrels.get(q._id);
      ndcg.push(ndcgAt(ranked, grades, 10));
      recall.push(recallAt(ranked, new Set([...grades].filter(([, g]) => g > 0).map(([id]) => id)), 10));
    }
    lines.push(`  ${label.padEnd(24)} nDCG@10 ${fmt(mean(ndcg), 3)}  recall@10 ${fmt(mean(recall), 3)}  latency p50 ${fmt(percentile(latency, 50))} ms, p95 ${fmt(percentile(latency, 95))} ms`);
  }
  return lines;
}
