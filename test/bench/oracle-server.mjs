// The oracle extraction model (oracle-observations.mjs) served as an OpenAI-compatible `/v1/chat/completions`
// endpoint on 127.0.0.1, inside the bench's process: the worker under test reaches it through its own
// `LLM=openai` adapter, as it would a real model, so the whole path (prompt, answer, validation, consolidation,
// provenance) runs. BENCH_LLM=oracle chooses it (llm-endpoint.mjs); BENCH_ORACLE_SLIPS and BENCH_ORACLE_CUT set
// its slips and cuts.
import { createServer } from "node:http";
import { createOracle } from "./oracle-observations.mjs";

export const ORACLE_MODEL = "locomo-observations-oracle";

/** ~4 characters a token: the usage block is an estimate, as the adapter's own is without one. */
const tokensOf = (text) => Math.ceil(text.length / 4);

/**
 * Starts the endpoint on a free port; resolves with its base URL, the model's name, the oracle (what it served) and
 * `stop()`. The user message is the prompt; the system message counts in the usage only.
 */
export async function startOracleServer(samples, options = {}) {
  const oracle = createOracle(samples, options);
  const server = createServer(async (request, response) => {
    try {
      if (request.method !== "POST" || !request.url?.endsWith("/chat/completions"))
        return reply(response, 404, { error: { message: "POST /v1/chat/completions" } });
      let body = "";
      for await (const chunk of request) body += chunk;
      const { messages, model } = JSON.parse(body);
      const prompt = [...(messages ?? [])].reverse().find((m) => m.role === "user")?.content;
      if (typeof prompt !== "string") return reply(response, 400, { error: { message: "no user message" } });
      const { content, finishReason } = oracle.answer(prompt);
      const promptTokens = messages.reduce((n, m) => n + tokensOf(String(m.content ?? "")), 0);
      const completionTokens = tokensOf(content);
      reply(response, 200, {
        id: `oracle-${oracle.record.requests}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: model ?? ORACLE_MODEL,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: finishReason }],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      });
    } catch (error) {
      reply(response, 500, { error: { message: String(error?.message ?? error) } });
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    model: ORACLE_MODEL,
    oracle,
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function reply(response, status, body) {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  response.end(text);
}
