// memory_context_build latency with 1k and 10k memories in a namespace (cache off, cache hit),
// get_context latency, and how much of the budget contexts fill on the LoCoMo questions.
import { loadLocomo, loadMsmarco, parseLocomoDate } from "./data.mjs";
import { fmt, mean, percentile } from "./metrics.mjs";
import { sleep } from "./worker.mjs";

export async function runContext(newTenant) {
  const { corpus, queries } = loadMsmarco();
  const tenant = await newTenant("context");
  const lines = ["Context building (memory_context_build, token_budget 4000, defaults otherwise)"];
  for (const [namespace, size] of [["k1", 1000], ["k10", 10_000]]) {
    for (let i = 0; i < size; i += 100) {
      const memories = Array.from({ length: Math.min(100, size - i) }, (_, j) => {
        const n = i + j;
        return { content: `${corpus[n % corpus.length].text}${n >= corpus.length ? ` (copy ${Math.floor(n / corpus.length)})` : ""}`, importance: (n % 10) / 10 };
      });
      await tenant.call("memory_batch_store", { namespace, memories });
    }
    // Right after embedding, auto-link is still draining: its new links rightly invalidate contexts (a
    // context follows links). Then again once every job has settled.
    await tenant.drainEmbeddings();
    const build = (q, useCache) => tenant.call("memory_context_build", { query: q.text, token_budget: 4000, namespace, use_cache: useCache });
    const off = [];
    for (const q of queries) off.push((await build(q, false)).ms);
    const draining = await repeatedHits(queries, build);
    await tenant.settle();
    const settled = await repeatedHits(queries, build);
    lines.push(
      `  ${String(size).padStart(6)} memories: cache off p50 ${fmt(percentile(off, 50))} ms, p95 ${fmt(percentile(off, 95))} ms; ` +
        `cache hit p50 ${fmt(percentile(settled.hit, 50))} ms, p95 ${fmt(percentile(settled.hit, 95))} ms`,
    );
    lines.push(
      `           repeated calls that hit: ${settled.hits}/${queries.length} once jobs settled, ` +
        `${draining.hits}/${queries.length} right after embedding while auto-link drains (new links invalidate)`,
    );
  }

  const around = [];
  for (const q of queries.slice(0, 40)) {
    const hits = (await tenant.call("search", { query: q.text, project: "k1", limit: 1 })).result.results;
    if (hits.length > 0) around.push((await tenant.call("get_context", { chunk_id: hits[0].chunk_id, count: 3 })).ms);
  }
  lines.push(`  get_context (count 3): p50 ${fmt(percentile(around, 50))} ms, p95 ${fmt(percentile(around, 95))} ms over ${around.length} calls`);
  lines.push(...(await fillRatio(newTenant)));
  return lines;
}

/** LoCoMo conversations as messages; every question as a context request at two budgets. */
async function fillRatio(newTenant) {
  const tenant = await newTenant("context-locomo");
  const samples = loadLocomo();
  for (const sample of samples) {
    const calls = [];
    const c = sample.conversation;
    for (let n = 1; c[`session_${n}`]; n++) {
      const at = parseLocomoDate(c[`session_${n}_date_time`]);
      c[`session_${n}`].forEach((turn, i) =>
        calls.push(["log_chat", { conversation_id: `${sample.sample_id}:${n}`, role: turn.speaker === c.speaker_a ? "user" : "assistant", agent_name: turn.speaker, content: turn.text, project_id: sample.sample_id, timestamp: at + i * 1000 }]),
      );
    }
    await tenant.callMany(calls);
  }
  // Contexts follow links: measured once auto-link has settled, or the figures depend on how far it got
  // (3.4 memories a context in one run, 8.8 in another).
  await tenant.settle();
  const lines = [];
  for (const budget of [1000, 4000]) {
    const calls = samples.flatMap((s) => s.qa.map((qa) => ["memory_context_build", { query: qa.question, token_budget: budget, namespace: s.sample_id, use_cache: false }]));
    const results = await tenant.callMany(calls);
    const fill = results.map((r) => r.total_tokens / budget);
    const count = results.map((r) => r.memory_count);
    lines.push(
      `  LoCoMo questions (${results.length}), token_budget ${budget}: fill ratio mean ${fmt(mean(fill) * 100)}% of the budget ` +
        `(p50 ${fmt(percentile(fill, 50) * 100)}%, cap ${fmt(90)}% after the 10% buffer), ${fmt(mean(count))} memories on average`,
    );
  }
  return lines;
}

/** Builds each query's context once to fill the cache, then again: the second round's latency and hits. */
async function repeatedHits(queries, build) {
  for (const q of queries) await build(q, true);
  await sleep(500); // cache writes finish after the response
  const hit = [];
  let hits = 0;
  for (const q of queries) {
    const { result, ms } = await build(q, true);
    hit.push(ms);
    if (result.cache_hit) hits++;
  }
  return { hit, hits };
}
