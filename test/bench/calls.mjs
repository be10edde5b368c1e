// Per tool, as the worker measured it: server time (p50/p95 of each call's duration in the usage log)
// and D1 round trips (statements run alone plus batches), for the tools agents call most, against a
// project of 1,000 memories. Calls go one at a time, as an agent makes them; seeding uses memory_batch_store
// only, so the log's figures are the workload's own.
import { loadMsmarco } from "./data.mjs";
import { fmt } from "./metrics.mjs";

const REPEAT = 40;
/** Server time above this is named (the bar for per-request CPU). */
const SLOW_MS = 10;

export async function runCalls(newTenant) {
  const rows = await measureTools(newTenant);
  const lines = [
    `Per tool, measured inside the worker (${REPEAT} calls each, one at a time, over 1,000 memories)`,
    "  server = the call's duration; D1 = mean round trips and wait; worker = duration less D1 wait (CPU, local embedder, KV, queue)",
    `  ${"tool".padEnd(24)} ${"server p50".padStart(10)} ${"p95".padStart(6)} ${"D1 trips".padStart(9)} ${"D1 ms".padStart(6)} ${"worker p50".padStart(11)} ${"p95".padStart(6)}`,
    ...rows.map(
      (r) =>
        `  ${r.tool.padEnd(24)} ${fmt(r.p50_ms).padStart(10)} ${fmt(r.p95_ms).padStart(6)} ${fmt(r.d1_round_trips).padStart(9)} ${fmt(r.d1_ms).padStart(6)} ${fmt(r.worker_p50_ms).padStart(11)} ${fmt(r.worker_p95_ms).padStart(6)}`,
    ),
  ];
  const slow = rows.filter((r) => r.worker_p50_ms > SLOW_MS).map((r) => `${r.tool} (${fmt(r.worker_p50_ms)} ms)`);
  lines.push(`  Worker time over ${SLOW_MS} ms at p50: ${slow.length > 0 ? slow.join(", ") : "none"}`);
  return lines;
}

/** The agents' common tools, REPEAT calls each one at a time over 1,000 memories; get_usage_report's row of each. */
export async function measureTools(newTenant) {
  const { corpus, queries } = loadMsmarco();
  const tenant = await newTenant("calls");
  for (let i = 0; i < 1000; i += 100) {
    await tenant.call("memory_batch_store", {
      namespace: "p",
      memories: corpus.slice(i, i + 100).map((d) => ({ content: d.text })),
    });
  }
  await tenant.drainEmbeddings();
  const chunkId = (await tenant.call("search", { query: queries[0].text, project: "p", limit: 1 })).result.results[0]
    .chunk_id;

  const text = (n) => corpus[(1000 + n) % corpus.length].text;
  const question = (n) => queries[n % queries.length].text;
  const workload = {
    log_chat: (n) => ({ conversation_id: "c", project_id: "p", role: "user", content: question(n) }),
    add_message: (n) => ({ contextId: "ctx", message: question(n), role: n % 2 ? "assistant" : "user" }),
    memory_store: (n) => ({ content: text(n), namespace: "p" }),
    store_memory: (n) => ({ file_name: `doc-${n}.md`, content: text(n + 50) }),
    search: (n) => ({ query: question(n), project: "p" }),
    memory_context_build: (n) => ({ query: question(n), namespace: "p", token_budget: 2000, use_cache: false }),
    build_context: (n) => ({ documents: [{ content: text(n) }, { content: text(n + 1) }], max_tokens: 500 }),
    retrieve_context: () => ({ contextId: "ctx" }),
    get_context: () => ({ chunk_id: chunkId, count: 3 }),
    get_similar_contexts: (n) => ({ query: question(n) }),
    context_get_working_set: () => ({ project_id: "p" }),
    ping: () => ({}),
  };
  const before = (await tenant.stats()).tool_calls;
  for (let n = 0; n < REPEAT; n++) {
    for (const [tool, args] of Object.entries(workload)) await tenant.call(tool, args(n));
  }
  await tenant.logged(before + REPEAT * Object.keys(workload).length); // the USAGE queue writes the log after each response
  const report = (await tenant.call("get_usage_report", { period: "day" })).result;
  return Object.keys(workload).map((tool) => report.tools.find((t) => t.tool === tool));
}
