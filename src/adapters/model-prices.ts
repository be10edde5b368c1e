import type { Config } from "../config";

/**
 * Workers AI models' prices in neurons per million tokens, from the LLM, embeddings and other tables of
 * developers.cloudflare.com/workers-ai/platform/pricing (as published 2026-08-28; $0.011 per 1,000 neurons).
 * Models missing here are models whose price we have not found there (embeddinggemma-300m is not listed); add them
 * from that page. Every model the configuration names by default is here (the summary model included): a deployment
 * configured with another one is told so by get_usage_report (`unpricedModels`).
 */
export const NEURONS_PER_MILLION_TOKENS: Readonly<Record<string, { input: number; output: number }>> = {
  "@cf/qwen/qwen3-embedding-0.6b": { input: 1_075, output: 0 },
  "@cf/baai/bge-m3": { input: 1_075, output: 0 },
  "@cf/baai/bge-small-en-v1.5": { input: 1_841, output: 0 },
  "@cf/baai/bge-base-en-v1.5": { input: 6_058, output: 0 },
  "@cf/baai/bge-large-en-v1.5": { input: 18_582, output: 0 },
  "@cf/baai/bge-reranker-base": { input: 283, output: 0 },
  "@cf/meta/llama-4-scout-17b-16e-instruct": { input: 24_545, output: 77_273 },
  "@cf/meta/llama-3.1-8b-instruct": { input: 25_608, output: 75_147 },
  "@cf/qwen/qwen3-30b-a3b-fp8": { input: 4_625, output: 30_475 },
  "@cf/openai/gpt-oss-20b": { input: 18_182, output: 27_273 },
  "@cf/ibm-granite/granite-4.0-h-micro": { input: 1_542, output: 10_158 },
  // toMarkdown's image descriptions (to-markdown-neurons.ts).
  "@cf/google/gemma-3-12b-it": { input: 31_371, output: 50_560 },
};

/**
 * Neurons one call costs, rounded up. An unknown model answers 0: its calls are not counted against any neuron
 * budget, so a caller that enforces one should check `hasKnownPrice` first and say the cost is unknown.
 */
export function neuronsFor(model: string, tokensIn: number, tokensOut: number): number {
  const price = hasKnownPrice(model) ? NEURONS_PER_MILLION_TOKENS[model] : undefined;
  if (!price) return 0;
  return Math.ceil((tokensIn * price.input + tokensOut * price.output) / 1_000_000);
}

/** Whether `neuronsFor` knows the model's price (otherwise it answers 0). */
export function hasKnownPrice(model: string): boolean {
  return Object.hasOwn(NEURONS_PER_MILLION_TOKENS, model);
}

/**
 * The Workers AI models this configuration calls (embedder, summaries, rerank, extraction) that have no published
 * price here: their calls count 0 neurons, so the neurons reported are short by theirs.
 */
export function unpricedModels(config: Config): string[] {
  const called = [
    config.embedder === "workers-ai" ? config.embeddingModel : null,
    config.summarizer === "workers-ai" ? config.summaryModel : null,
    config.rerank?.model ?? null,
    config.extraction.llm === "workers-ai" ? config.extraction.model : null,
  ];
  return [...new Set(called.filter((model): model is string => model !== null && !hasKnownPrice(model)))];
}
