import type { Reranker } from "../ports";

/**
 * A cross-encoder reranker on Workers AI (@cf/baai/bge-reranker-base): reads the query and each
 * candidate together, which an embedding cannot, and scores how well the text answers the query.
 */
export class WorkersAiReranker implements Reranker {
  readonly name: string;

  constructor(
    private readonly ai: Ai,
    private readonly model: string,
  ) {
    this.name = `workers-ai:${model}`;
  }

  async rerank(query: string, texts: string[]): Promise<number[]> {
    if (texts.length === 0) return [];
    const result = (await this.ai.run(
      this.model as keyof AiModels,
      { query, contexts: texts.map((text) => ({ text })), top_k: texts.length } as never,
    )) as {
      response?: { id?: number; score?: number }[];
    };
    const scores = new Array<number>(texts.length).fill(Number.NEGATIVE_INFINITY);
    for (const r of result.response ?? []) {
      if (typeof r.id === "number" && r.id >= 0 && r.id < texts.length && typeof r.score === "number")
        scores[r.id] = r.score;
    }
    if (scores.some((s) => s === Number.NEGATIVE_INFINITY))
      throw new Error(`Reranker ${this.model} scored ${result.response?.length ?? 0} of ${texts.length} texts`);
    return scores;
  }
}
