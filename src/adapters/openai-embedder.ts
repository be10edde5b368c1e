import type { Embedder } from "../ports";
import { checkedVector } from "./workers-ai-embedder";

/** Any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM, ...). */
export class OpenAiCompatibleEmbedder implements Embedder {
  readonly name: string;
  readonly maxBatch = 100;
  readonly semantic = true;

  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string | undefined,
    private readonly model: string,
    readonly dimensions: number,
    // Called as a plain function: workerd's fetch called as this object's method throws "Illegal invocation".
    private readonly fetcher: typeof fetch = (input, init) => fetch(input, init),
  ) {
    this.name = `openai:${model}`;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.maxBatch) {
      const batch = texts.slice(i, i + this.maxBatch);
      const response = await this.fetcher(`${this.baseUrl.replace(/\/+$/, "")}/embeddings`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.model, input: batch }),
      });
      if (!response.ok)
        throw new Error(`Embedding endpoint answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
      const body = (await response.json()) as { data?: { embedding: number[]; index: number }[] };
      if (!Array.isArray(body.data) || body.data.length !== batch.length)
        throw new Error("Embedding endpoint returned a malformed body");
      for (const row of [...body.data].sort((a, b) => a.index - b.index))
        out.push(checkedVector(row.embedding, this.dimensions, this.name));
    }
    return out;
  }
}
