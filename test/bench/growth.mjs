// Search's D1 time as one tenant grows: 1k, 10k and 100k memories (MS MARCO passages, repeated with a
// suffix past the sample's 5,000 as scale.mjs does), each size its own tenant so the usage log's row is that
// size's alone. The scale-out issue asks that search's D1 time at 100k be at most 3x the 1k figure.
import { loadMsmarco } from "./data.mjs";
import { fmt } from "./metrics.mjs";

const SIZES = [1_000, 10_000, 100_000];
/** memory_batch_store calls per JSON-RPC request (100 memories each; ~0.4 MB a request, under MAX_BODY_BYTES). */
const CALLS_PER_REQUEST = 10;
/** Each query asked this often, one search at a time (hybrid, limit 10, as scale.mjs asks). */
const ROUNDS = 2;
const LIMIT_RATIO = 3;

export async function runGrowth(newTenant) {
  const { corpus, queries } = loadMsmarco();
  const text = (i) => `${corpus[i % corpus.length].text}${i >= corpus.length ? ` (copy ${Math.floor(i / corpus.length)})` : ""}`;
  const rows = [];
  for (const size of SIZES) {
    const tenant = await newTenant(`growth-${size}`);
    const started = performance.now();
    for (let i = 0; i < size; i += 100 * CALLS_PER_REQUEST) {
      const calls = [];
      for (let j = i; j < Math.min(size, i + 100 * CALLS_PER_REQUEST); j += 100) {
        calls.push(["memory_batch_store", { namespace: "growth", memories: Array.from({ length: Math.min(100, size - j) }, (_, k) => ({ content: text(j + k) })) }]);
      }
      await tenant.callMany(calls);
    }
    const writeSeconds = (performance.now() - started) / 1000;
    // Embed and link jobs share the worker and the D1 database with the searches: wait them out.
    const settleSeconds = await tenant.settle();
    // The minute passes build the common words' top postings (keyword-tops.ts), as they would have by then in production.
    const topsSeconds = await tenant.topPostings();
    const topWords = (await tenant.stats()).keyword_top_words;
    const before = (await tenant.stats()).tool_calls;
    for (let round = 0; round < ROUNDS; round++) {
      for (const q of queries) await tenant.call("search", { query: q.text, project: "growth", limit: 10 });
    }
    await tenant.logged(before + ROUNDS * queries.length);
    const served = (await tenant.call("get_usage_report", { period: "day" })).result.tools.find((t) => t.tool === "search");
    rows.push({ size, served, writeSeconds, settleSeconds, topsSeconds, topWords });
  }
  const base = rows[0].served.d1_ms;
  const last = rows.at(-1);
  return [
    `Growth: search's D1 time as one tenant grows (MS MARCO passages, a tenant per size; ${ROUNDS} x ${queries.length} searches each, hybrid, limit 10; get_usage_report)`,
    `  ${"items".padStart(8)} ${"server p50".padStart(10)} ${"p95".padStart(6)} ${"D1 trips".padStart(9)} ${"D1 ms".padStart(7)} ${"x 1k".padStart(6)}   (written at, settled after; words with top postings, built after)`,
    ...rows.map(
      (r) =>
        `  ${r.size.toLocaleString("en").padStart(8)} ${fmt(r.served.p50_ms).padStart(10)} ${fmt(r.served.p95_ms).padStart(6)} ${fmt(r.served.d1_round_trips, 2).padStart(9)} ${fmt(r.served.d1_ms, 2).padStart(7)} ${fmt(r.served.d1_ms / base, 2).padStart(6)}   (${fmt(r.size / r.writeSeconds, 0)} items/s, ${fmt(r.settleSeconds, 1)} s; ${r.topWords} words, ${fmt(r.topsSeconds, 1)} s)`,
    ),
    `  D1 ms at ${last.size.toLocaleString("en")} / at ${rows[0].size.toLocaleString("en")}: ${fmt(last.served.d1_ms / base, 2)}x (target: at most ${LIMIT_RATIO}x)`,
  ];
}
