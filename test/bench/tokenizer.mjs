// Cold start of token counting. On each freshly started worker (new isolate), after a few warm pings,
// the first build_context is the first call that counts tokens, so it pays for loading the tokenizer;
// its latency over a warm ping is that cost. The second build_context shows the warm figure.
import { spawnSync } from "node:child_process";
import { fmt, percentile } from "./metrics.mjs";

const DOCUMENTS = [
  "The quick brown fox jumps over the lazy dog. 東京タワーは赤い。안녕하세요 👋🏽",
  "function add(a, b) {\n  return a + b;\n}\n",
];

export async function runTokenizer(newTenant, { restart }) {
  const runs = Number(process.env.BENCH_TOKENIZER_RUNS ?? 5);
  const firstOverPing = [];
  const warmOverPing = [];
  const pings = [];
  for (let run = 0; run < runs; run++) {
    await restart();
    const tenant = await newTenant("tokenizer"); // admin calls start the isolate; none counts tokens
    const ping = [];
    for (let i = 0; i < 5; i++) ping.push((await tenant.call("ping", {})).ms);
    const warmPing = percentile(ping, 50);
    const build = () =>
      tenant.call("build_context", { documents: DOCUMENTS.map((content) => ({ content })), max_tokens: 1000 });
    const first = await build();
    if (!(first.result.token_count > 0))
      throw new Error(`build_context counted nothing: ${JSON.stringify(first.result)}`);
    const warm = await build();
    pings.push(warmPing);
    firstOverPing.push(first.ms - warmPing);
    warmOverPing.push(warm.ms - warmPing);
  }
  const list = (values) => values.map((v) => v.toFixed(0)).join(", ");
  return [
    `Tokenizer cold start (${runs} fresh workers; build_context after warm pings, ms)`,
    `  ping (median of 5)            median ${fmt(percentile(pings, 50), 1)}   [${list(pings)}]`,
    `  first build_context - ping    median ${fmt(percentile(firstOverPing, 50), 1)}   [${list(firstOverPing)}]`,
    `  second build_context - ping   median ${fmt(percentile(warmOverPing, 50), 1)}   [${list(warmOverPing)}]`,
    ...inNode(runs),
  ];
}

/** Load time and heap of the same module in Node, each run in a fresh process (scripts/measure-tokenizer.mjs). */
function inNode(runs) {
  const child = spawnSync(process.execPath, ["scripts/measure-tokenizer.mjs", String(runs)], { encoding: "utf8" });
  if (child.status !== 0) throw new Error(`measure-tokenizer failed: ${child.stderr}`);
  const [title, ...table] = child.stdout.trim().split("\n");
  return [`Tokenizer load and heap, ${title}`, ...table.map((line) => `  ${line}`)];
}
