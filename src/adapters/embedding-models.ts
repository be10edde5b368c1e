/**
 * What the Workers AI embedding models need and give, for choosing one and checking the deployment's
 * settings against it. Retrieval figures: MTEB English v2, retrieval average (model cards / leaderboard).
 */
export interface EmbeddingModel {
  nativeDimensions: number;
  /** Trained so that a prefix of the vector is itself an embedding (renormalised): fewer dimensions, less Vectorize cost. */
  matryoshka: boolean;
  /** Input tokens the model reads; longer text is cut by the model. */
  maxInputTokens: number;
  /** Texts one call may carry (the model's input schema): the embedder splits larger jobs into calls of this many. */
  maxTexts: number;
  /** How queries and documents are told apart (retrieval models embed them differently). */
  input: "text" | "queries-documents" | "prompted-text";
  retrieval: number | null;
}

/**
 * Texts a call for a model whose limit we have not confirmed: the smallest limit among the models we know
 * (qwen3-embedding's 32). More calls cost a little time; one call over the limit fails the whole embed job.
 */
export const FEWEST_TEXTS = 32;

export const EMBEDDING_MODELS: Record<string, EmbeddingModel> = {
  "@cf/qwen/qwen3-embedding-0.6b": { nativeDimensions: 1024, matryoshka: true, maxInputTokens: 8192, maxTexts: 32, input: "queries-documents", retrieval: 61.8 },
  "@cf/google/embeddinggemma-300m": { nativeDimensions: 768, matryoshka: true, maxInputTokens: 2048, maxTexts: FEWEST_TEXTS, input: "prompted-text", retrieval: 55.7 },
  "@cf/baai/bge-base-en-v1.5": { nativeDimensions: 768, matryoshka: false, maxInputTokens: 512, maxTexts: 100, input: "text", retrieval: 54.8 },
  "@cf/baai/bge-large-en-v1.5": { nativeDimensions: 1024, matryoshka: false, maxInputTokens: 512, maxTexts: 100, input: "text", retrieval: null },
  "@cf/baai/bge-small-en-v1.5": { nativeDimensions: 384, matryoshka: false, maxInputTokens: 512, maxTexts: 100, input: "text", retrieval: null },
  "@cf/baai/bge-m3": { nativeDimensions: 1024, matryoshka: false, maxInputTokens: 8192, maxTexts: FEWEST_TEXTS, input: "text", retrieval: null },
};

/** Queries are phrased as search instructions (Qwen3's and EmbeddingGemma's model cards). */
export const QUERY_INSTRUCTION = "Given a question or keywords, retrieve the stored memories and messages that answer it";

/**
 * Refuses settings the model cannot honour: more dimensions than it has, or fewer when its vectors
 * cannot be cut. Unknown models pass (their vectors' length is checked on the first call).
 */
export function checkEmbeddingSettings(model: string, dimensions: number): void {
  const known = EMBEDDING_MODELS[model];
  if (!known) return;
  if (dimensions > known.nativeDimensions) {
    throw new Error(`Configuration error: EMBEDDING_DIMENSIONS is ${dimensions} but ${model} has ${known.nativeDimensions}`);
  }
  if (dimensions < known.nativeDimensions && !known.matryoshka) {
    throw new Error(
      `Configuration error: EMBEDDING_DIMENSIONS is ${dimensions} but ${model} gives ${known.nativeDimensions} and its vectors cannot be shortened; ` +
        `use ${known.nativeDimensions} or a Matryoshka model (${Object.keys(EMBEDDING_MODELS)
          .filter((m) => EMBEDDING_MODELS[m]!.matryoshka)
          .join(", ")})`,
    );
  }
}

/** The model's input for a list of texts. */
export function embeddingInput(model: string, texts: string[], purpose: "query" | "document"): Record<string, unknown> {
  switch (EMBEDDING_MODELS[model]?.input) {
    case "queries-documents":
      return purpose === "query" ? { queries: texts, instruction: QUERY_INSTRUCTION } : { documents: texts };
    case "prompted-text":
      return { text: texts.map((t) => (purpose === "query" ? `task: search result | query: ${t}` : `title: none | text: ${t}`)) };
    default:
      return { text: texts };
  }
}
