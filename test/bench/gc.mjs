// Seed 004: context_get_working_set and context_gc_analyze latency with 10k segments in one project
// (plus context_analyze_usage, which reads the same rows). Segments are MS MARCO passages stored with
// memory_batch_store, a fifth of them logs (fresh logs are pruning candidates, the rest survive and are
// written back as GC survivors on every analysis: the worst case for rows written).
import { loadMsmarco } from "./data.mjs";
import { fmt, percentile } from "./metrics.mjs";
import { sleep } from "./worker.mjs";

const SEGMENTS = 10_000;
const CALLS = 30;
const TYPES = ["note", "log", "code", "message", "decision"];
/** Background jobs (embedding, auto-link) compete with the measured calls; wait for them this long at most. */
const DRAIN_LINKS_SECONDS = 300;

export async function runGc(newTenant) {
  const { corpus } = loadMsmarco();
  const tenant = await newTenant("gc");
  const project = "gc10k";
  const lines = [`Working set and GC (${SEGMENTS} segments in one project, ${CALLS} calls each)`];

  const writeStarted = performance.now();
  const calls = [];
  for (let i = 0; i < SEGMENTS; i += 100) {
    const memories = Array.from({ length: Math.min(100, SEGMENTS - i) }, (_, j) => {
      const n = i + j;
      return {
        content: `${corpus[n % corpus.length].text}${n >= corpus.length ? ` (copy ${Math.floor(n / corpus.length)})` : ""}`,
        type: TYPES[n % TYPES.length],
      };
    });
    calls.push(["memory_batch_store", { namespace: project, memories }]);
  }
  const stored = [];
  // 5 calls (500 passages, ~250 KB) per JSON-RPC batch: under the 1 MB body limit.
  for (let i = 0; i < calls.length; i += 5) stored.push(...(await tenant.callMany(calls.slice(i, i + 5))));
  const tokens = stored.reduce((s, r) => s + r.total_tokens, 0);
  lines.push(`  stored ${SEGMENTS} segments (${tokens} tokens) in ${fmt((performance.now() - writeStarted) / 1000)} s`);
  const embedSeconds = await tenant.drainEmbeddings();
  const linkSeconds = await drainLinks(tenant);
  lines.push(
    `  background jobs before timing: embeddings drained in ${fmt(embedSeconds)} s; auto-link ${linkSeconds === null ? `still pending after ${DRAIN_LINKS_SECONDS} s (timings include that load)` : `drained in ${fmt(linkSeconds)} s`}`,
  );

  const time = async (name, args) => {
    const ms = [];
    let last;
    for (let i = 0; i < CALLS; i++) {
      const { result, ms: took } = await tenant.call(name, args);
      ms.push(took);
      last = result;
    }
    return { ms, last };
  };
  const line = (label, ms, extra = "") =>
    `  ${label.padEnd(52)} p50 ${fmt(percentile(ms, 50)).padStart(7)} ms, p95 ${fmt(percentile(ms, 95)).padStart(7)} ms${extra}`;

  const listed = await time("context_get_working_set", { project_id: project });
  lines.push(
    line(
      "context_get_working_set (lists 100, totals all)",
      listed.ms,
      ` (segment_count ${listed.last.segment_count}, ${listed.last.total_tokens} tokens)`,
    ),
  );
  const totals = await time("context_get_working_set", { project_id: project, limit: 0 });
  lines.push(line("context_get_working_set limit 0 (totals only)", totals.ms));
  const analyzed = await time("context_gc_analyze", { project_id: project });
  lines.push(
    line(
      "context_gc_analyze",
      analyzed.ms,
      ` (${analyzed.last.total_candidates} candidates, ${analyzed.last.analyzed_segments - analyzed.last.total_candidates} survivors written per call)`,
    ),
  );
  const planned = await time("context_gc_analyze", { project_id: project, target_tokens: 50_000 });
  lines.push(
    line(
      "context_gc_analyze target_tokens 50000 (with plan)",
      planned.ms,
      ` (plan stashes ${planned.last.pruning_plan.stash_segments.length} segments)`,
    ),
  );
  const usage = await time("context_analyze_usage", { project_id: project });
  lines.push(line("context_analyze_usage", usage.ms, ` (health ${usage.last.health_score.score})`));
  return lines;
}

/** Seconds until auto-link has run for every item, or null after DRAIN_LINKS_SECONDS. */
async function drainLinks(tenant) {
  const started = performance.now();
  for (;;) {
    const s = await tenant.stats();
    if (!s.pending_links) return (performance.now() - started) / 1000;
    if (performance.now() - started > DRAIN_LINKS_SECONDS * 1000) return null;
    await sleep(1000);
  }
}
