// LoCoMo: each turn a message (log_chat), each session a conversation, session dates as timestamps;
// every question asked with `search`, evidence recall@k. The baseline is plain SQLite FTS5 BM25 over
// the same turn texts (plain-bm25.mjs). The `stages` suite restarts the worker without each search
// stage in turn (SEARCH_STAGES) and measures what it was worth. Both also report by held-out fold of
// conversations (folds.mjs), so a figure or a stage that only fits some conversations shows.
import { measureAbstention } from "./abstention.mjs";
import { loadLocomo, parseLocomoDate } from "./data.mjs";
import { assignFolds, contributionLines, foldFigures, foldReportLines, groupsOf } from "./folds.mjs";
import { fmt, mean, pct, percentile, recallAt, uniqueInOrder } from "./metrics.mjs";
import { locomoTurns, plainBm25 } from "./plain-bm25.mjs";
import { BENCH_EMBEDDER } from "./worker.mjs";

export const CATEGORIES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial" };
const KS = [1, 5, 10, 20];
const STAGES = ["time", "speaker", "when", "proximity", "feedback", "neighbours", "links"];

export async function runLocomo(newTenant) {
  return (await measureLocomo(newTenant)).lines;
}

/**
 * The LoCoMo figures: the lines (with the report by held-out fold), and for the targets `folds` (R@10
 * by fold, hybrid search), `served` (search's server time) and `abstention` (hybrid's share answered with nothing).
 */
export async function measureLocomo(newTenant) {
  const samples = loadLocomo();
  const loaded = await loadTenant(newTenant, samples);
  const { tenant, questions } = loaded;
  const modes = { hybrid: [], bm25: [], keyword: [], vector: [] };
  // Each search is followed by a ping, so both see the same machine.
  const latency = [];
  const ping = [];
  const loggedBefore = (await tenant.stats()).tool_calls;
  for (const qa of questions) {
    const { result, ms } = await tenant.call("search", { query: qa.question, project: qa.project, limit: 20 });
    latency.push(ms);
    ping.push((await tenant.call("ping", {})).ms);
    modes.hybrid.push(loaded.rank(result));
  }
  // Search judged by server time: the usage log's row for these searches alone (hybrid, one at a time).
  await tenant.logged(loggedBefore + 2 * questions.length);
  const served = (await tenant.call("get_usage_report", { period: "day" })).result.tools.find(
    (t) => t.tool === "search",
  );
  for (const mode of ["keyword", "vector"]) {
    const results = await tenant.callMany(
      questions.map((qa) => ["search", { query: qa.question, project: qa.project, limit: 20, mode }]),
    );
    modes[mode] = results.map(loaded.rank);
  }
  const baseline = plainBm25(locomoTurns(samples));
  modes.bm25 = questions.map((qa) => baseline(qa.question, qa.project, 20));

  const recall = (name, k, filter = () => true) => recallOf(questions, modes[name], k, filter);
  const lines = [];
  lines.push(
    `LoCoMo: ${samples.length} conversations, ${loaded.turns} turns, ${questions.length} questions with evidence`,
  );
  lines.push(
    `  ingest (log_chat, JSON-RPC batches of 50): ${fmt(loaded.turns / loaded.ingestSeconds, 0)} turns/s; embed and link jobs settled ${fmt(loaded.embedSeconds, 1)} s after the last write`,
  );
  lines.push(`  evidence recall@k (%)      ${KS.map((k) => `R@${k}`.padStart(6)).join("")}`);
  for (const name of ["hybrid", "bm25", "keyword", "vector"]) {
    const label = {
      hybrid: "hybrid search (default)",
      bm25: "plain FTS5 BM25 baseline",
      keyword: "keyword only (contextual)",
      vector: `vector only (${BENCH_EMBEDDER})`,
    }[name];
    lines.push(`  ${label.padEnd(26)} ${KS.map((k) => pct(recall(name, k)).padStart(6)).join("")}`);
  }
  const gain = (recall("hybrid", 10) - recall("bm25", 10)) * 100;
  lines.push(`  hybrid - BM25 at R@10: ${gain >= 0 ? "+" : ""}${fmt(gain, 1)} points`);
  lines.push(`  per category, R@10 hybrid / BM25 (%):`);
  for (const [cat, label] of Object.entries(CATEGORIES)) {
    const only = (qa) => String(qa.category) === cat;
    const n = questions.filter(only).length;
    lines.push(
      `    ${cat} ${label.padEnd(12)} n=${String(n).padStart(4)}  ${pct(recall("hybrid", 10, only)).padStart(5)} / ${pct(recall("bm25", 10, only)).padStart(5)}`,
    );
  }
  const p50 = percentile(latency, 50);
  const ping50 = percentile(ping, 50);
  lines.push(
    `  search latency (hybrid, limit 20, ~${Math.round(loaded.turns / samples.length)} turns per project), each followed by a ping: ` +
      `p50 ${fmt(p50)} ms, p95 ${fmt(percentile(latency, 95))} ms; ping p50 ${fmt(ping50)} ms (search ${fmt(p50 / ping50, 2)}x a ping)`,
  );
  const texts = samples.flatMap((s) =>
    Object.entries(s.conversation).flatMap(([k, v]) =>
      k.startsWith("session_") && Array.isArray(v) ? v.map((t) => `${t.text} ${t.blip_caption ?? ""}`) : [],
    ),
  );
  texts.push(...samples.flatMap((s) => [s.conversation.speaker_a, s.conversation.speaker_b]));
  lines.push(
    `  search by server time (get_usage_report, ${served.calls} hybrid searches): p50 ${fmt(served.p50_ms)} ms, p95 ${fmt(served.p95_ms)} ms; ` +
      `D1 ${fmt(served.d1_round_trips, 2)} round trips, ${fmt(served.d1_ms, 2)} ms mean; worker p50 ${fmt(served.worker_p50_ms)} ms (targets: p50 ≤ 8 ms, ≤ 2 trips, D1 ≤ 6 ms)`,
  );
  const abstention = await measureAbstention(
    tenant,
    samples.map((s) => s.sample_id),
    texts,
    "message",
  );
  lines.push(...abstention.lines);
  const split = assignFolds(samples);
  const folds = foldFigures(questions, recallsAt10(questions, modes.hybrid), split, groupsOf(CATEGORIES));
  lines.push(...foldReportLines(folds, split, groupsOf(CATEGORIES)));
  return { lines, folds, served, abstention: abstention.hybrid };
}

/** R@10 with every stage, then without each in turn (a fresh worker each time: SEARCH_STAGES is a deployment setting). */
export async function runStages(newTenant, { restart }) {
  const samples = loadLocomo();
  const lines = ["LoCoMo evidence recall@10 (%) without each search stage (SEARCH_STAGES)"];
  lines.push(
    `  ${"stages".padEnd(24)} ${"all".padStart(6)}${Object.values(CATEGORIES)
      .map((c) => c.slice(0, 11).padStart(12))
      .join("")}`,
  );
  const split = assignFolds(samples);
  const groups = groupsOf(CATEGORIES);
  const byFold = new Map();
  const before = process.env.SEARCH_STAGES;
  try {
    for (const without of [null, ...STAGES, "all"]) {
      if (without === null) delete process.env.SEARCH_STAGES;
      else process.env.SEARCH_STAGES = without === "all" ? "" : STAGES.filter((s) => s !== without).join(",");
      await restart();
      const loaded = await loadTenant(newTenant, samples);
      const results = await loaded.tenant.callMany(
        loaded.questions.map((qa) => ["search", { query: qa.question, project: qa.project, limit: 10 }]),
      );
      const ranks = results.map(loaded.rank);
      const cells = [
        recallOf(loaded.questions, ranks, 10),
        ...Object.keys(CATEGORIES).map((cat) =>
          recallOf(loaded.questions, ranks, 10, (qa) => String(qa.category) === cat),
        ),
      ];
      const label =
        without === null ? "all stages" : without === "all" ? "none (the match alone)" : `without ${without}`;
      lines.push(`  ${label.padEnd(24)} ${cells.map((r, i) => pct(r).padStart(i === 0 ? 6 : 12)).join("")}`);
      byFold.set(label, foldFigures(loaded.questions, recallsAt10(loaded.questions, ranks), split, groups));
    }
    lines.push(`  R@10 contribution on each held-out fold (all stages minus the stage off, points); a stage does not`);
    lines.push(`  generalize when its mean over folds is <= 0 or it is negative on more than half of them`);
    for (const [label, figures] of byFold)
      if (label !== "all stages") lines.push(...contributionLines(label, byFold.get("all stages"), figures, groups));
  } finally {
    if (before === undefined) delete process.env.SEARCH_STAGES;
    else process.env.SEARCH_STAGES = before;
    // The suites after this one measure the configured search, not the last variant.
    await restart();
  }
  return lines;
}

/** A tenant holding every LoCoMo turn as a message, embedded; and the questions with evidence. */
async function loadTenant(newTenant, samples) {
  const tenant = await newTenant("locomo");
  const diaByItem = new Map();
  let turns = 0;
  const ingestStart = performance.now();
  for (const sample of samples) {
    const calls = [];
    const conversation = sample.conversation;
    for (let n = 1; conversation[`session_${n}`]; n++) {
      const timestamp = parseLocomoDate(conversation[`session_${n}_date_time`]);
      conversation[`session_${n}`].forEach((turn, i) => {
        const content = turn.blip_caption ? `${turn.text} [shares a photo: ${turn.blip_caption}]` : turn.text;
        calls.push({
          dia: turn.dia_id,
          args: {
            conversation_id: `${sample.sample_id}:session_${n}`,
            role: turn.speaker === conversation.speaker_a ? "user" : "assistant",
            agent_name: turn.speaker,
            content,
            project_id: sample.sample_id,
            timestamp: timestamp + i * 1000,
          },
        });
      });
    }
    const results = await tenant.callMany(calls.map((c) => ["log_chat", c.args]));
    results.forEach((r, i) => diaByItem.set(r.message_id, calls[i].dia));
    turns += calls.length;
  }
  const ingestSeconds = (performance.now() - ingestStart) / 1000;
  // Embed and link jobs settled: links are search evidence, so results must not change while they land.
  const embedSeconds = await tenant.settle();
  // The minute passes build the tenant's posting blocks (block-pass.ts) and merge the keyword index's segments
  // (keyword-segments.ts), as they would have by then in production.
  await tenant.postingBlocks();
  const questions = samples.flatMap((s) =>
    s.qa
      .map((qa) => ({
        ...qa,
        project: s.sample_id,
        evidence: new Set((qa.evidence ?? []).join(" ").match(/D\d+:\d+/g) ?? []),
      }))
      .filter((qa) => qa.evidence.size > 0),
  );
  const rank = (result) => uniqueInOrder(result.results.map((r) => diaByItem.get(r.item_id)).filter(Boolean));
  return { tenant, questions, rank, turns, ingestSeconds, embedSeconds };
}

function recallsAt10(questions, ranks) {
  return questions.map((qa, i) => recallAt(ranks[i], qa.evidence, 10));
}

function recallOf(questions, ranks, k, filter = () => true) {
  return mean(
    questions.map((qa, i) => (filter(qa) ? recallAt(ranks[i], qa.evidence, k) : NaN)).filter(Number.isFinite),
  );
}
