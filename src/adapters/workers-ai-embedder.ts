import type { Embedder } from "../ports";
import { normalize } from "../core/shared/vector-math";

/** Workers AI text embeddings (default @cf/baai/bge-base-en-v1.5, 768 dims, ≤100 texts a call). */
export class WorkersAiEmbedder implements Embedder {
  readonly name: string;
  readonly maxBatch = 100;
  readonly semantic = true;

  constructor(
    private readonly ai: Ai,
    private readonly model: string,
    readonly dimensions: number,
  ) {
    this.name = `workers-ai:${model}`;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.maxBatch) {
      const batch = texts.slice(i, i + this.maxBatch);
      const result = (await this.ai.run(this.model as keyof AiModels, { text: batch } as never)) as { data?: number[][] };
      if (!Array.isArray(result.data) || result.data.length !== batch.length) {
        throw new Error(`Workers AI model ${this.model} returned ${result.data?.length ?? "no"} embeddings for ${batch.length} texts`);
      }
      for (const values of result.data) out.push(checkedVector(values, this.dimensions, this.name));
    }
    return out;
  }
}

export function checkedVector(values: number[], dimensions: number, source: string): Float32Array {
  if (values.length !== dimensions) {
    throw new Error(`Configuration error: ${source} returned ${values.length}-dimensional vectors but EMBEDDING_DIMENSIONS is ${dimensions}`);
  }
  return normalize(Float32Array.from(values));
}
