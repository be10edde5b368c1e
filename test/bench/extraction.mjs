// Extraction on LoCoMo: the conversations stored with memory_ingest (extraction on), then every question searched
// twice, over the turns alone and over turns and derived memories, for evidence recall@10 (a derived memory finds
// the evidence turns among its sources); with what extraction made (memories by kind, decisions by kind) and what
// it cost (model calls, tokens and neurons per turn, time per window). measureExtraction takes its tool caller and
// data as arguments (test/node/bench-extraction.test.ts runs it against a fake); runExtraction is the real bench.
import {
  coveredTurns,
  evidenceRecall,
  ingestAndExtract,
  locomoQuestions,
  readHistories,
} from "./conversation-ingest.mjs";
import { loadLocomo } from "./data.mjs";
import { withExtractionWorker } from "./extraction-worker.mjs";
import { fmt, mean, pct, percentile } from "./metrics.mjs";
import { keptObservations } from "./oracle-observations.mjs";

export const CATEGORIES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial" };
const EVENT_KINDS = ["added", "duplicate", "superseded", "failed", "dropped", "deferred"];
const K = 10;

export async function runExtraction(newTenant, context) {
  const samples = loadLocomo();
  return withExtractionWorker(newTenant, context, samples, async ({ tenant, model, progress, settle, oracle }) => {
    const measured = await measureExtraction({
      call: tenant.call,
      callMany: tenant.callMany,
      samples,
      progress,
      settle,
      modelLabel: model.label,
      oracle,
    });
    return measured.lines;
  });
}

/**
 * `call(name, args)` answers {result, ms}; `callMany([[name, args], ...])` the results (default: one call each);
 * `progress` (optional) the exact extraction record (local-d1.mjs), else memory_history is read; `settle` (optional)
 * waits for the jobs after extraction; `oracle` (optional) the oracle model's record (oracle-observations.mjs), whose
 * served observations are checked against the memories kept. Returns the printed lines and the figures.
 */
export async function measureExtraction({ call, callMany, samples, progress, settle, modelLabel = "", wait, oracle }) {
  callMany ??= (calls) => Promise.all(calls.map(async ([name, args]) => (await call(name, args)).result));
  const { ingest, waited, settleSeconds } = await ingestAndExtract({ call, samples, progress, settle, wait });
  const histories = await readHistories(call, ingest.conversationIds);
  const events = [...histories.values()].flat();
  const windows = progress ? (await progress()).windows : windowsOfEvents(events);
  const derived = await listDerived(call, samples);
  const memoriesByKind = {};
  for (const m of derived) memoriesByKind[m.memory_kind] = (memoriesByKind[m.memory_kind] ?? 0) + 1;

  const questions = locomoQuestions(samples).filter((qa) => qa.evidence.size > 0);
  const search = (kinds) =>
    callMany(questions.map((qa) => ["search", { query: qa.question, project: qa.project, limit: K, ...kinds }]));
  const turnsOnly = await search({ kinds: ["message"] });
  const withDerived = await search({});
  const recalls = (answers) =>
    answers.map((a, i) => evidenceRecall(questions[i].evidence, coveredTurns(a.results, ingest.turns)));
  const figures = {
    turns: ingest.turns.size,
    sessions: ingest.conversationIds.length,
    recall: recallByCategory(questions, recalls(turnsOnly), recalls(withDerived)),
    derivedShare: derivedShare(withDerived.map((a) => a.results)),
    onlyThroughDerived: onlyThroughDerived(questions, withDerived, ingest.turns),
    memoriesByKind,
    oracle: oracle
      ? {
          ...keptObservations(oracle.served(), derived, ingest.turns),
          observations: oracle.observationCount,
          requests: oracle.record.requests,
          cutAnswers: oracle.record.cutAnswers,
          wrappedAnswers: oracle.record.wrappedAnswers,
          syntaxAnswers: oracle.record.syntaxAnswers,
          unmatchedTurns: oracle.record.unmatchedTurns,
        }
      : null,
    events: Object.fromEntries(EVENT_KINDS.map((kind) => [kind, events.filter((e) => e.event === kind).length])),
    // memory_history answers a conversation's newest 200 events: one that has 200 may have more.
    cappedHistories: [...histories.values()].filter((h) => h.length >= 200).length,
    cost: costOf(windows, ingest.turns.size, Boolean(progress)),
    waited,
  };
  return { lines: reportLines(figures, { samples, questions, ingest, settleSeconds, modelLabel }), figures };
}

/** Current derived memories ({project, memory_kind, content, sources}), through memory_list (kind "memory", 100 a page). */
async function listDerived(call, samples) {
  const derived = [];
  for (const sample of samples) {
    for (let offset = 0; ; offset += 100) {
      const page = (await call("memory_list", { project: sample.sample_id, kinds: ["memory"], limit: 100, offset }))
        .result;
      for (const m of page.memories)
        if (m.derived)
          derived.push({
            project: sample.sample_id,
            memory_kind: m.memory_kind,
            // A listing shows the start of each text; a longer one is read whole.
            content: m.truncated ? (await call("memory_get", { id: m.id })).result.content : m.preview,
            sources: m.sources ?? [],
          });
      if (page.memories.length < 100) break;
    }
  }
  return derived;
}

/** Windows as memory_history shows them (one row per window that logged an event; calls are not in it). */
function windowsOfEvents(events) {
  const windows = new Map();
  for (const e of events)
    if (e.window && !windows.has(e.window))
      windows.set(e.window, {
        id: e.window,
        calls: null,
        model: e.model,
        tokensIn: e.tokens_in ?? 0,
        tokensOut: e.tokens_out ?? 0,
        neurons: e.neurons ?? 0,
        latencyMs: e.latency_ms ?? 0,
      });
  return [...windows.values()];
}

function costOf(windows, turns, exact) {
  const sum = (field) => windows.reduce((n, w) => n + (w[field] ?? 0), 0);
  return {
    source: exact ? "extraction_windows in the local D1" : "memory_history (windows that logged an event)",
    windows: windows.length,
    failedWindows: windows.filter((w) => w.status === "failed").length,
    calls: exact ? sum("calls") : null,
    models: [...new Set(windows.map((w) => w.model).filter(Boolean))],
    tokensInPerTurn: sum("tokensIn") / turns,
    tokensOutPerTurn: sum("tokensOut") / turns,
    neuronsPerTurn: sum("neurons") / turns,
    latencyP50: percentile(
      windows.map((w) => w.latencyMs),
      50,
    ),
    latencyP95: percentile(
      windows.map((w) => w.latencyMs),
      95,
    ),
  };
}

/** R@10 per category for both searches: {1: {n, turns, derived}, ..., all: (categories 1-4)}. */
function recallByCategory(questions, turnsOnly, withDerived) {
  const of = (keep) => {
    const at = questions.flatMap((qa, i) => (keep(qa) ? [i] : []));
    return { n: at.length, turns: mean(at.map((i) => turnsOnly[i])), derived: mean(at.map((i) => withDerived[i])) };
  };
  return {
    ...Object.fromEntries(Object.keys(CATEGORIES).map((cat) => [cat, of((qa) => String(qa.category) === cat)])),
    all: of((qa) => qa.category >= 1 && qa.category <= 4),
  };
}

/** Share of the with-derived search's results that are derived memories. */
function derivedShare(resultLists) {
  const all = resultLists.flat();
  return all.length === 0 ? Number.NaN : all.filter((r) => r.derived).length / all.length;
}

/**
 * Share of the evidence turns the with-derived search finds that only a derived memory's sources give: not a turn
 * that ranked itself (a result, or folded into a memory's result).
 */
function onlyThroughDerived(questions, answers, turns) {
  let found = 0;
  let onlyDerived = 0;
  answers.forEach((a, i) => {
    const ranked = a.results.flatMap((r) => [...(r.derived ? [] : [r]), ...(r.folded_sources ?? [])]);
    const direct = coveredTurns(ranked, turns);
    for (const dia of coveredTurns(a.results, turns)) {
      if (!questions[i].evidence.has(dia)) continue;
      found++;
      if (!direct.has(dia)) onlyDerived++;
    }
  });
  return found === 0 ? Number.NaN : onlyDerived / found;
}

function reportLines(f, { samples, questions, ingest, settleSeconds, modelLabel }) {
  const c = f.cost;
  const kinds = Object.entries(f.memoriesByKind).sort(([, a], [, b]) => b - a);
  const total = kinds.reduce((n, [, count]) => n + count, 0);
  const lines = [
    `Extraction on LoCoMo (memory_ingest, ${modelLabel}; model that ran: ${c.models.join(", ") || "none"})`,
    `  ${samples.length} conversations, ${f.sessions} sessions, ${f.turns} turns; ${questions.length} questions with evidence`,
    `  ingest: ${ingest.calls} memory_ingest calls (one a session) in ${fmt(ingest.seconds, 1)} s; extraction read every turn ` +
      `${fmt(f.waited.seconds, 1)} s after the last call${f.waited.timedOut ? ` (TIMED OUT: ${f.waited.unread} conversations unread)` : ""}` +
      `; the jobs after it (embedding, links, keyword index) settled ${fmt(settleSeconds, 1)} s later`,
    `  derived memories (current): ${total}${kinds.length ? ` (${kinds.map(([k, n]) => `${k} ${n}`).join(", ")})` : ""}`,
    ...(f.oracle ? oracleLines(f.oracle) : []),
    `  events (memory_history): ${Object.entries(f.events)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")}${f.cappedHistories ? ` (${f.cappedHistories} conversations at memory_history's 200)` : ""}`,
    `  windows (${c.source}): ${c.windows}, ${c.failedWindows} failed; model calls ${c.calls ?? "n/a"}; ` +
      `tokens per ingested turn ${fmt(c.tokensInPerTurn, 1)} in / ${fmt(c.tokensOutPerTurn, 1)} out; ` +
      `neurons per turn ${fmt(c.neuronsPerTurn, 2)}`,
    `  extraction time per window (latency_ms): p50 ${fmt(c.latencyP50, 0)} ms, p95 ${fmt(c.latencyP95, 0)} ms`,
    `  evidence recall@${K} (%), search limit ${K}: turns only (kinds: message) / turns + derived memories`,
  ];
  for (const [cat, label] of [...Object.entries(CATEGORIES).slice(0, 4), ["all", "all 1-4"]])
    lines.push(recallLine(cat, label, f.recall[cat]));
  lines.push(`  adversarial, reported apart:`);
  lines.push(recallLine("5", CATEGORIES[5], f.recall[5]));
  lines.push(
    `  derived memories are ${pct(f.derivedShare)} % of the with-derived results; ${pct(f.onlyThroughDerived)} % of the evidence it finds comes only through a derived memory's sources`,
  );
  return lines;
}

/** What the oracle served and what the server kept of it, with its slips and cut answers. */
function oracleLines(o) {
  const of = (part, whole) => `${part} of ${whole}${whole > 0 ? ` (${pct(part / whole)} %)` : ""}`;
  const bySlip = Object.entries(o.bySlip)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, s]) => `${kind} ${s.recovered}/${s.slipped}`)
    .join(", ");
  return [
    `  oracle: ${o.requests} requests; observations served ${o.served} of ${o.observations} in the data, kept ${of(o.kept, o.served)}` +
      (o.unmatchedTurns ? `; ${o.unmatchedTurns} prompt turns not found in the data` : ""),
    `  oracle slips: slipped ${o.slipped}, recovered ${of(o.recovered, o.slipped)}${bySlip ? ` (recovered/slipped: ${bySlip})` : ""}; ` +
      `answers cut ${o.cutAnswers}, their observations kept ${of(o.cutKept, o.cut)}; answers wrapped in prose ${o.wrappedAnswers}`,
    ...(Object.keys(o.bySyntax).length > 0
      ? [
          `  oracle syntax: ${Object.entries(o.bySyntax)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([writer, w]) => `${writer} (${o.syntaxAnswers[writer] ?? 0} answers) kept ${of(w.kept, w.served)}`)
            .join("; ")}`,
        ]
      : []),
  ];
}

function recallLine(cat, label, r) {
  const gain = (r.derived - r.turns) * 100;
  return `    ${`${cat === "all" ? "" : `${cat} `}${label}`.padEnd(14)} n=${String(r.n).padStart(4)}  ${pct(r.turns).padStart(5)} / ${pct(r.derived).padStart(5)}  (${gain >= 0 ? "+" : ""}${fmt(gain, 1)})`;
}
