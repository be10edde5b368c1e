// memory_context_build latency with 1k and 10k memories in a namespace (cache off, cache hit),
// get_context latency, and how much of the budget contexts fill on the LoCoMo questions.
import { loadLocomo, loadMsmarco, parseLocomoDate } from "./data.mjs";
import { fmt, mean, percentile } from "./metrics.mjs";
import { sleep } from "./worker.mjs";

export async function runContext(newTenant) {
  const { corpus, queries } = loadMsmarco();
  const tenant = await newTenant("context");
  const lines = ["Context building (memory_context_build, token_budget 4000, defaults otherwise)"];
  for (const [namespace, size] of [
    ["k1", 1000],
    ["k10", 10_000],
  ]) {
    for (let i = 0; i < size; i += 100) {
      const memories = Array.from({ length: Math.min(100, size - i) }, (_, j) => {
        const n = i + j;
        return {
          content: `${corpus[n % corpus.length].text}${n >= corpus.length ? ` (copy ${Math.floor(n / corpus.length)})` : ""}`,
          importance: (n % 10) / 10,
        };
      });
      await tenant.call("memory_batch_store", { namespace, memories });
    }
    // Right after embedding, auto-link is still draining: its new links rightly invalidate the contexts
    // that followed links of the items they touch. Then once every job has settled, and while the
    // settled contexts' memories are linked again.
    // The first-linking round starts as soon as embedding has drained: the link jobs follow within a
    // queue batch (max_batch_timeout 1 s), so any earlier call would find them done.
    await tenant.drainEmbeddings();
    const build = (q, useCache) =>
      tenant.call("memory_context_build", { query: q.text, token_budget: 4000, namespace, use_cache: useCache });
    const linking = (await tenant.stats()).pending_links;
    const draining = await repeatedHits(queries, build);
    const linked = linking - (await tenant.stats()).pending_links;
    const off = [];
    for (const q of queries) off.push((await build(q, false)).ms);
    await tenant.settle();
    const settled = await repeatedHits(queries, build);
    const relinked = await repeatedHits(queries, build, (context) => relink(tenant, context));
    lines.push(
      `  ${String(size).padStart(6)} memories: cache off p50 ${fmt(percentile(off, 50))} ms, p95 ${fmt(percentile(off, 95))} ms; ` +
        `cache hit p50 ${fmt(percentile(settled.hit, 50))} ms, p95 ${fmt(percentile(settled.hit, 95))} ms`,
    );
    lines.push(
      `           repeated calls that hit: ${settled.hits}/${queries.length} once jobs settled, ` +
        `${relinked.hitsUnchanged}/${relinked.unchanged} while each context's memories are re-linked and find no new link ` +
        `(${queries.length - relinked.unchanged} re-linked contexts gained a link: ${relinked.hits - relinked.hitsUnchanged} of them hit); ` +
        `${draining.hits}/${queries.length} during the first linking (auto-link linked ${linked} memories meanwhile; new links rightly invalidate)`,
    );
  }

  const around = [];
  for (const q of queries.slice(0, 40)) {
    const hits = (await tenant.call("search", { query: q.text, project: "k1", limit: 1 })).result.results;
    if (hits.length > 0) around.push((await tenant.call("get_context", { chunk_id: hits[0].chunk_id, count: 3 })).ms);
  }
  lines.push(
    `  get_context (count 3): p50 ${fmt(percentile(around, 50))} ms, p95 ${fmt(percentile(around, 95))} ms over ${around.length} calls`,
  );
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
        calls.push([
          "log_chat",
          {
            conversation_id: `${sample.sample_id}:${n}`,
            role: turn.speaker === c.speaker_a ? "user" : "assistant",
            agent_name: turn.speaker,
            content: turn.text,
            project_id: sample.sample_id,
            timestamp: at + i * 1000,
          },
        ]),
      );
    }
    await tenant.callMany(calls);
  }
  // Contexts follow links: measured once auto-link has settled, or the figures depend on how far it got
  // (3.4 memories a context in one run, 8.8 in another).
  await tenant.settle();
  const lines = [];
  for (const budget of [1000, 4000]) {
    const calls = samples.flatMap((s) =>
      s.qa.map((qa) => [
        "memory_context_build",
        { query: qa.question, token_budget: budget, namespace: s.sample_id, use_cache: false },
      ]),
    );
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

/** The background auto-link's threshold for memories (DOCUMENT_SIMILARITY_THRESHOLD's default). */
const AUTO_LINK_THRESHOLD = 0.8;

/**
 * Links every memory of a context again, as a re-run of auto-link does (the sweep, a re-embedding,
 * auto_link_documents at the background threshold). True if some memory gained a neighbour or a
 * stronger link: an approximate index and top-k make linking order-dependent, so a re-link can find a
 * pair the first pass missed, and that rightly invalidates.
 */
async function relink(tenant, context) {
  const ids = context.memories.map((m) => m.id);
  const before = await tenant.callMany(
    ids.map((id) => ["get_document_relationships", { document_id: id, max_depth: 1 }]),
  );
  const after = await tenant.callMany(
    ids.map((id) => ["auto_link_documents", { document_id: id, similarity_threshold: AUTO_LINK_THRESHOLD }]),
  );
  return after.some((linked, i) => {
    const known = new Map((before[i].relationships.depth_1 ?? []).map((r) => [r.document_id, r.strength]));
    return linked.similar_documents.some((d) => !(known.get(d.document_id) >= d.similarity_score));
  });
}

/**
 * Builds each query's context once to fill the cache, then again: the second round's latency and hits.
 * `before(first)` runs before each repeated call, given that query's first context; it says whether it
 * changed links (hits are also counted over the calls where it did not).
 */
async function repeatedHits(queries, build, before) {
  const first = [];
  for (const q of queries) first.push((await build(q, true)).result);
  await sleep(500); // cache writes finish after the response
  const hit = [];
  let hits = 0;
  let unchanged = 0;
  let hitsUnchanged = 0;
  for (const [i, q] of queries.entries()) {
    const changed = before ? await before(first[i]) : false;
    const { result, ms } = await build(q, true);
    hit.push(ms);
    if (result.cache_hit) hits++;
    if (!changed) unchanged++;
    if (!changed && result.cache_hit) hitsUnchanged++;
  }
  return { hit, hits, unchanged, hitsUnchanged };
}
