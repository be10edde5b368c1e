import type { Embedder, EmbeddingPurpose } from "../ports";
import { normalize } from "../shared/vector-math";
import { EMBEDDING_MODELS, embeddingInput, FEWEST_TEXTS, fitInput } from "./embedding-models";

/**
 * Workers AI text embeddings (default @cf/qwen/qwen3-embedding-0.6b cut to 768 dims), at most the model's
 * texts a call (qwen3-embedding: 32; bge: 100; a model we do not know: FEWEST_TEXTS), each text cut to the
 * model's input tokens (fitInput: bge 512, qwen3 8,192; a model we do not know: 512 counted in bytes).
 * Queries and documents go in as the model expects them; a Matryoshka model's vectors are cut to the
 * configured dimensions and renormalised.
 */
export class WorkersAiEmbedder implements Embedder {
  readonly name: string;
  readonly maxBatch: number;
  readonly semantic = true;

  constructor(
    private readonly ai: Ai,
    private readonly model: string,
    readonly dimensions: number,
  ) {
    this.name = `workers-ai:${model}`;
    this.maxBatch = EMBEDDING_MODELS[model]?.maxTexts ?? FEWEST_TEXTS;
  }

  async embed(given: string[], purpose: EmbeddingPurpose = "document"): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    const cut = EMBEDDING_MODELS[this.model]?.matryoshka === true;
    // No text goes over the model's input tokens (bge: 512): one would fail the whole call.
    const texts = given.map((text) => fitInput(this.model, text, purpose));
    for (let i = 0; i < texts.length; i += this.maxBatch) {
      const batch = texts.slice(i, i + this.maxBatch);
      const result = (await this.ai.run(
        this.model as keyof AiModels,
        embeddingInput(this.model, batch, purpose) as never,
      )) as { data?: number[][] };
      if (!Array.isArray(result.data) || result.data.length !== batch.length) {
        throw new Error(
          `Workers AI model ${this.model} returned ${result.data?.length ?? "no"} embeddings for ${batch.length} texts`,
        );
      }
      for (const values of result.data)
        out.push(
          checkedVector(
            cut && values.length > this.dimensions ? values.slice(0, this.dimensions) : values,
            this.dimensions,
            this.name,
          ),
        );
    }
    return out;
  }
}

export function checkedVector(values: number[], dimensions: number, source: string): Float32Array {
  if (values.length !== dimensions) {
    throw new Error(
      `Configuration error: ${source} returned ${values.length}-dimensional vectors but EMBEDDING_DIMENSIONS is ${dimensions}`,
    );
  }
  return normalize(Float32Array.from(values));
}
