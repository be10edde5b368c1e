// Question answering end to end on LoCoMo: the conversations stored with memory_ingest (extraction on), each
// question's context from memory_context_build, an answerer model answering from it, and two judges against the
// gold answer: a lenient model judge in mem0's style and a strict one (token F1 ≥ 0.5). Adversarial questions
// (category 5) are scored by abstention. measureQa takes the tool caller, data, answerer and judge as arguments
// (test/node/bench-extraction.test.ts runs it against fakes); runQa is the real bench.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { coveredTurns, evidenceRecall, ingestAndExtract, locomoQuestions } from "./conversation-ingest.mjs";
import { loadLocomo } from "./data.mjs";
import { CATEGORIES } from "./extraction.mjs";
import { withExtractionWorker } from "./extraction-worker.mjs";
import { chatEndpointFromEnv, ENDPOINT_HELP, endpointAnswerer, endpointJudge } from "./llm-endpoint.mjs";
import { fmt, mean, pct, percentile } from "./metrics.mjs";
import { abstained, contextText, scriptedAnswerer, scriptedJudge, strictCorrect, tokenF1 } from "./qa-grading.mjs";

const BUDGET = Number(process.env.BENCH_QA_BUDGET ?? 2000);

export async function runQa(newTenant, context) {
  const fake = process.env.BENCH_QA_FAKE === "1";
  const endpoint = chatEndpointFromEnv();
  if (!endpoint && !fake)
    return [
      `QA end to end on LoCoMo: skipped, it needs an OpenAI-compatible model to answer and judge: ${ENDPOINT_HELP}`,
    ];
  const models = fake
    ? { answer: scriptedAnswerer, judge: scriptedJudge, label: "scripted stand-ins (BENCH_QA_FAKE=1)" }
    : {
        answer: endpointAnswerer(endpoint),
        judge: endpointJudge(endpoint),
        label: `answerer ${endpoint.answerModel}, lenient judge ${endpoint.judgeModel} at ${endpoint.baseUrl}`,
      };
  const samples = loadLocomo();
  return withExtractionWorker(newTenant, context, samples, async ({ tenant, model, progress, settle }) => {
    const measured = await measureQa({
      call: tenant.call,
      samples,
      ...models,
      progress,
      settle,
      budget: BUDGET,
      outFile: ".bench/qa-answers.jsonl",
      concurrency: Number(process.env.BENCH_QA_CONCURRENCY ?? 4),
      limit: process.env.BENCH_QA_LIMIT ? Number(process.env.BENCH_QA_LIMIT) : undefined,
      labels: { models: models.label, extraction: model.label },
    });
    return measured.lines;
  });
}

/**
 * `call(name, args)` answers {result, ms}; `answer({question, context})` an answer's text; `judge({question, gold,
 * answer})` true for CORRECT. Contexts are built one at a time (their latency is a figure), then answered and judged
 * `concurrency` at a time. Writes one JSON line a question to `outFile`; returns the printed lines and the figures.
 */
export async function measureQa({
  call,
  samples,
  answer,
  judge,
  budget = 2000,
  outFile,
  concurrency = 4,
  limit,
  progress,
  settle,
  wait,
  labels = {},
}) {
  const { ingest, waited } = await ingestAndExtract({ call, samples, progress, settle, wait });
  // Categories 1-4 are scored against their answer; category 5 (adversarial) has none, only a premise to refuse.
  const questions = locomoQuestions(samples)
    .filter((qa) => qa.category === 5 || (qa.category >= 1 && qa.category <= 4 && qa.answer !== undefined))
    .slice(0, limit);
  const contexts = [];
  for (const qa of questions) {
    const { result, ms } = await call("memory_context_build", {
      query: qa.question,
      token_budget: budget,
      min_similarity: 0,
      use_cache: false,
      namespace: qa.project,
    });
    contexts.push({ memories: result.memories, tokens: result.total_tokens, ms });
  }
  const rows = await inPool(questions, concurrency, async (qa, i) => {
    const { memories, tokens } = contexts[i];
    const said = await answer({ question: qa.question, context: contextText(memories, ingest.turns) });
    const adversarial = qa.category === 5;
    const gold = adversarial ? null : String(qa.answer);
    return {
      sample: qa.project,
      category: qa.category,
      question: qa.question,
      gold,
      answer: said,
      lenient: adversarial ? null : await judge({ question: qa.question, gold, answer: said }),
      strict: adversarial ? null : strictCorrect(said, gold),
      f1: adversarial ? null : Number(tokenF1(said, gold).toFixed(3)),
      abstained: abstained(said),
      context_tokens: tokens,
      context_ids: memories.map((m) => m.id),
      evidence_in_context: evidenceRecall(qa.evidence, coveredTurns(memories, ingest.turns)),
    };
  });
  if (outFile) {
    mkdirSync(dirname(outFile), { recursive: true });
    writeFileSync(outFile, rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
  }
  const figures = qaFigures(rows, contexts);
  return { lines: reportLines(figures, { budget, outFile, labels, waited, turns: ingest.turns.size }), figures, rows };
}

/** Runs `work` over the items, `size` at a time; the results in the items' order. */
async function inPool(items, size, work) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(size, items.length) }, worker));
  return results;
}

function qaFigures(rows, contexts) {
  const share = (list, test) => (list.length === 0 ? Number.NaN : list.filter(test).length / list.length);
  const accuracy = (keep) => {
    const of = rows.filter(keep);
    return { n: of.length, lenient: share(of, (r) => r.lenient), strict: share(of, (r) => r.strict) };
  };
  const scored = (r) => r.category !== 5;
  const adversarial = rows.filter((r) => r.category === 5);
  const latencies = contexts.map((c) => c.ms);
  return {
    accuracy: {
      ...Object.fromEntries([1, 2, 3, 4].map((cat) => [cat, accuracy((r) => r.category === cat)])),
      all: accuracy(scored),
    },
    adversarial: { n: adversarial.length, abstained: share(adversarial, (r) => r.abstained) },
    abstainedOnScored: share(rows.filter(scored), (r) => r.abstained),
    evidenceInContext: mean(
      rows
        .filter(scored)
        .map((r) => r.evidence_in_context)
        .filter(Number.isFinite),
    ),
    contextTokens: mean(contexts.map((c) => c.tokens)),
    contextMemories: mean(contexts.map((c) => c.memories.length)),
    contextDerived: mean(contexts.map((c) => c.memories.filter((m) => m.derived).length)),
    retrievalP50: percentile(latencies, 50),
    retrievalP95: percentile(latencies, 95),
  };
}

function reportLines(f, { budget, outFile, labels, waited, turns }) {
  const lines = [
    `QA end to end on LoCoMo (memory_context_build: token_budget ${budget}, min_similarity 0, cache off)`,
    `  models: ${labels.models ?? "given"}; strict judge: token F1 ≥ 0.5, no model`,
    `  extraction: ${labels.extraction ?? "given"}; read ${turns} turns in ${fmt(waited.seconds, 1)} s${waited.timedOut ? ` (TIMED OUT: ${waited.unread} conversations unread)` : ""}`,
    `  accuracy (%)          n    lenient   strict`,
  ];
  for (const [cat, label] of [...Object.entries(CATEGORIES).slice(0, 4), ["all", "all 1-4"]]) {
    const a = f.accuracy[cat];
    lines.push(
      `    ${`${cat === "all" ? "" : `${cat} `}${label}`.padEnd(16)} ${String(a.n).padStart(4)}  ${pct(a.lenient).padStart(8)} ${pct(a.strict).padStart(8)}`,
    );
  }
  lines.push(
    `  adversarial (5): n=${f.adversarial.n}, abstained ${pct(f.adversarial.abstained)} % ('not mentioned' or the like); ` +
      `categories 1-4 abstained ${pct(f.abstainedOnScored)} %`,
  );
  lines.push(
    `  context: mean ${fmt(f.contextTokens, 0)} tokens of ${budget}, ${fmt(f.contextMemories, 1)} memories (${fmt(f.contextDerived, 1)} derived); ` +
      `evidence turns in it (1-4, a turn or a derived memory's sources) ${pct(f.evidenceInContext)} %`,
  );
  lines.push(`  retrieval (memory_context_build): p50 ${fmt(f.retrievalP50, 0)} ms, p95 ${fmt(f.retrievalP95, 0)} ms`);
  if (outFile) lines.push(`  answers: ${outFile}`);
  return lines;
}
