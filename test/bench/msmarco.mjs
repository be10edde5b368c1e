// MS MARCO sample: 5,000 passages stored with memory_batch_store, 50 queries with graded qrels;
// nDCG@10 and recall@10 for hybrid, keyword and vector search, and for plain FTS5 BM25 over the same
// passages (plain-bm25.mjs).
import { loadMsmarco } from "./data.mjs";
import { fmt, mean, ndcgAt, percentile, recallAt, uniqueInOrder } from "./metrics.mjs";
import { plainBm25 } from "./plain-bm25.mjs";
import { BENCH_EMBEDDER } from "./worker.mjs";

export async function runMsmarco(newTenant) {
  return (await measureMsmarco(newTenant)).lines;
}

/** The lines, and `ndcg`: nDCG@10 per mode (hybrid, keyword, vector) and for plain BM25. */
export async function measureMsmarco(newTenant) {
  const { corpus, queries, qrels } = loadMsmarco();
  const tenant = await newTenant("msmarco");
  const corpusIdsByItem = new Map();
  const started = performance.now();
  for (let i = 0; i < corpus.length; i += 100) {
    const slice = corpus.slice(i, i + 100);
    const { result } = await tenant.call("memory_batch_store", {
      namespace: "msmarco",
      memories: slice.map((p) => ({ content: p.title ? `${p.title}\n${p.text}` : p.text, type: "document" })),
    });
    result.ids.forEach((id, j) => corpusIdsByItem.set(id, [...(corpusIdsByItem.get(id) ?? []), slice[j]._id]));
  }
  const ingestSeconds = (performance.now() - started) / 1000;
  // Embed and link jobs settled: links are search evidence, so results must not change while they land.
  const embedSeconds = await tenant.settle();

  const lines = [`MS MARCO sample: ${corpus.length} passages, ${queries.length} queries (graded qrels)`];
  lines.push(
    `  ingest (memory_batch_store, 100 per call): ${fmt(corpus.length / ingestSeconds, 0)} items/s; embed and link jobs settled ${fmt(embedSeconds, 1)} s after the last write`,
  );
  const score = (ranked, q) => {
    const grades = qrels.get(q._id);
    return {
      ndcg: ndcgAt(ranked, grades, 10),
      recall: recallAt(ranked, new Set([...grades].filter(([, g]) => g > 0).map(([id]) => id)), 10),
    };
  };
  const ndcg = {};
  for (const [mode, label] of [
    ["hybrid", "hybrid search (default)"],
    ["keyword", "keyword only"],
    ["vector", `vector only (${BENCH_EMBEDDER})`],
  ]) {
    const scores = [];
    const latency = [];
    for (const q of queries) {
      const { result, ms } = await tenant.call("search", { query: q.text, project: "msmarco", limit: 10, mode });
      latency.push(ms);
      scores.push(score(uniqueInOrder(result.results.flatMap((r) => corpusIdsByItem.get(r.item_id) ?? [])), q));
    }
    ndcg[mode] = mean(scores.map((s) => s.ndcg));
    lines.push(
      `  ${label.padEnd(24)} nDCG@10 ${fmt(ndcg[mode], 3)}  recall@10 ${fmt(mean(scores.map((s) => s.recall)), 3)}  latency p50 ${fmt(percentile(latency, 50))} ms, p95 ${fmt(percentile(latency, 95))} ms`,
    );
  }
  const baseline = plainBm25(
    corpus.map((p) => ({ id: p._id, project: "msmarco", text: p.title ? `${p.title}\n${p.text}` : p.text })),
  );
  const plain = queries.map((q) => score(baseline(q.text, "msmarco", 10), q));
  ndcg.bm25 = mean(plain.map((s) => s.ndcg));
  lines.push(
    `  ${"plain FTS5 BM25".padEnd(24)} nDCG@10 ${fmt(ndcg.bm25, 3)}  recall@10 ${fmt(mean(plain.map((s) => s.recall)), 3)}`,
  );
  return { lines, ndcg };
}
