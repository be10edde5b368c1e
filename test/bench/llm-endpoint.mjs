// The models the extraction and qa suites use: which extraction model the worker runs (BENCH_LLM, LLM_BASE_URL,
// LLM_MODEL, LLM_API_KEY), and the OpenAI-compatible chat endpoint the qa suite's answerer and judge call.

/**
 * The worker's extraction model from the environment: BENCH_LLM=local|openai|oracle, or by default `openai` when
 * LLM_BASE_URL and LLM_MODEL are both set, else `local` (the offline rules). `oracle` serves LoCoMo's own
 * observations from inside the bench (oracle-server.mjs), with BENCH_ORACLE_SLIPS, BENCH_ORACLE_CUT,
 * BENCH_ORACLE_WRAP and BENCH_ORACLE_SYNTAX (shares, default 0) for its slips, cut answers, answers wrapped in prose
 * and answers in another syntax or shape (answer-syntax.mjs).
 */
export function extractionModelFromEnv(env = process.env) {
  const chosen = env.BENCH_LLM ?? (env.LLM_BASE_URL && env.LLM_MODEL ? "openai" : "local");
  if (chosen === "local") return { llm: "local", label: "LLM=local (offline rules)" };
  if (chosen === "oracle") {
    const slips = share(env.BENCH_ORACLE_SLIPS, "BENCH_ORACLE_SLIPS");
    const cut = share(env.BENCH_ORACLE_CUT, "BENCH_ORACLE_CUT");
    const wrap = share(env.BENCH_ORACLE_WRAP, "BENCH_ORACLE_WRAP");
    const syntax = share(env.BENCH_ORACLE_SYNTAX, "BENCH_ORACLE_SYNTAX");
    return {
      llm: "oracle",
      oracle: { slips, cut, wrap, syntax },
      label: `LLM=openai, LoCoMo's observations as an oracle (slips ${slips}, cut ${cut}, wrapped ${wrap}, other syntax ${syntax})`,
    };
  }
  if (chosen !== "openai") throw new Error(`BENCH_LLM: 'local', 'openai' or 'oracle', not '${chosen}'`);
  if (!env.LLM_BASE_URL || !env.LLM_MODEL) throw new Error("BENCH_LLM=openai needs LLM_BASE_URL and LLM_MODEL");
  return {
    llm: "openai",
    baseUrl: env.LLM_BASE_URL,
    model: env.LLM_MODEL,
    apiKey: env.LLM_API_KEY,
    label: `LLM=openai, ${env.LLM_MODEL} at ${env.LLM_BASE_URL}`,
  };
}

/** A share in [0, 1] from the environment (unset: 0). */
function share(text, name) {
  if (text === undefined || text === "") return 0;
  const value = Number(text);
  if (!(value >= 0 && value <= 1)) throw new Error(`${name}: a share from 0 to 1, not '${text}'`);
  return value;
}

/** The worker's vars for that model (bench.vars is a local file under .bench/, so the key may go there). */
export function extractionVars(model) {
  if (model.llm === "local") return { LLM: "local" };
  if (model.llm === "oracle") throw new Error("the oracle's vars come from its server (extraction-worker.mjs)");
  return {
    LLM: "openai",
    LLM_BASE_URL: model.baseUrl,
    LLM_MODEL: model.model,
    ...(model.apiKey ? { LLM_API_KEY: model.apiKey } : {}),
  };
}

/** The qa suite's endpoint: LLM_BASE_URL with QA_MODEL (else LLM_MODEL) to answer, JUDGE_MODEL (else LLM_MODEL) to judge. */
export function chatEndpointFromEnv(env = process.env) {
  const answerModel = env.QA_MODEL || env.LLM_MODEL;
  if (!env.LLM_BASE_URL || !answerModel) return null;
  return {
    baseUrl: env.LLM_BASE_URL.replace(/\/+$/, ""),
    apiKey: env.LLM_API_KEY,
    answerModel,
    judgeModel: env.JUDGE_MODEL || env.LLM_MODEL || answerModel,
  };
}

export const ENDPOINT_HELP =
  "set LLM_BASE_URL (an OpenAI-compatible …/v1) and LLM_MODEL or QA_MODEL (optional: LLM_API_KEY, JUDGE_MODEL), " +
  "or BENCH_QA_FAKE=1 for scripted stand-ins";

/** One chat completion's text; a busy endpoint (429, 5xx, unreachable) is asked again up to 3 times. */
export async function chat(endpoint, model, messages, maxTokens = 200) {
  for (let attempt = 1; ; attempt++) {
    let response;
    try {
      response = await fetch(`${endpoint.baseUrl}/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
        },
        body: JSON.stringify({ model, messages, temperature: 0, max_tokens: maxTokens }),
        signal: AbortSignal.timeout(120_000),
      });
    } catch (error) {
      if (attempt >= 3) throw error;
      await new Promise((r) => setTimeout(r, 2000 * attempt));
      continue;
    }
    if (response.ok) {
      const body = await response.json();
      return String(body.choices?.[0]?.message?.content ?? "").trim();
    }
    const said = `${endpoint.baseUrl} (${model}) answered ${response.status}: ${(await response.text()).slice(0, 300)}`;
    if ((response.status !== 429 && response.status < 500) || attempt >= 3) throw new Error(said);
    await new Promise((r) => setTimeout(r, 2000 * attempt));
  }
}

/** The answerer: the context, the question, a brief answer or 'not mentioned'. */
export function endpointAnswerer(endpoint) {
  return ({ question, context }) =>
    chat(endpoint, endpoint.answerModel, [
      { role: "system", content: "You answer questions about past conversations from the memories given." },
      { role: "user", content: answerPrompt(context, question) },
    ]);
}

export function answerPrompt(context, question) {
  return [
    "Memories from the conversations:",
    context || "(none)",
    "",
    `Question: ${question}`,
    "Answer briefly; say 'not mentioned' if the context does not say.",
  ].join("\n");
}

/**
 * The lenient judge, in the style of mem0's LoCoMo judge: CORRECT when the answer refers to the same thing as the
 * gold answer, generous about wording, length and date formats as long as they mean the same.
 */
export function endpointJudge(endpoint) {
  return async ({ question, gold, answer }) =>
    readVerdict(
      await chat(endpoint, endpoint.judgeModel, [{ role: "user", content: judgePrompt(question, gold, answer) }], 300),
    );
}

function judgePrompt(question, gold, answer) {
  return [
    "Label a generated answer to a question as CORRECT or WRONG against the gold (ground truth) answer.",
    "The question asks about something said in earlier conversations between two people. The gold answer is short;",
    "the generated answer may be longer. Be generous: if it refers to the same thing as the gold answer, it is",
    "CORRECT. For a time, a different format or a relative reference ('May 7th' for '7 May 2023', 'the week",
    "before 9 June' for '2 June') is CORRECT as long as it means the same date or period. An answer that says the",
    "information is not mentioned, or names something else, is WRONG.",
    "",
    `Question: ${question}`,
    `Gold answer: ${gold}`,
    `Generated answer: ${answer}`,
    "",
    'Give one sentence of reasoning, then the label as JSON: {"label": "CORRECT"} or {"label": "WRONG"}.',
  ].join("\n");
}

/** The label as JSON if there is one, else the last CORRECT or WRONG in the text. */
export function readVerdict(text) {
  const labelled = /"label"\s*:\s*"(CORRECT|WRONG)"/i.exec(text);
  if (labelled) return labelled[1].toUpperCase() === "CORRECT";
  const words = text.toUpperCase().match(/\b(CORRECT|WRONG)\b/g) ?? [];
  return words[words.length - 1] === "CORRECT";
}
