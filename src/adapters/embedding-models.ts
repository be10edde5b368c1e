import { utf8Bytes } from "../platform-limits";
import type { Embedder } from "../ports";

/**
 * What the Workers AI embedding models need and give, for choosing one and checking the deployment's
 * settings against it. Retrieval figures: MTEB English v2, retrieval average (model cards / leaderboard).
 */
export type Tokenizer = "wordpiece" | "sentencepiece" | "bytes";

export interface EmbeddingModel {
  nativeDimensions: number;
  /** Trained so that a prefix of the vector is itself an embedding (renormalised): fewer dimensions, less Vectorize cost. */
  matryoshka: boolean;
  /** Input tokens the model reads per text (its model page's "Maximum Input Tokens"); the adapter never sends more (fitInput). */
  maxInputTokens: number;
  /**
   * How its tokenizer can split a text, for an upper bound of its tokens without the tokenizer (inputTokensBound):
   * "wordpiece" (BERT: whitespace dropped, a token at least one character of the NFD text), "sentencepiece" (a piece
   * at least one character of the NFKC text, spaces included), "bytes" (byte-level BPE or byte fallback: a token at
   * least one UTF-8 byte).
   */
  tokenizer: Tokenizer;
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
  "@cf/qwen/qwen3-embedding-0.6b": {
    nativeDimensions: 1024,
    matryoshka: true,
    maxInputTokens: 8192,
    tokenizer: "bytes",
    maxTexts: 32,
    input: "queries-documents",
    retrieval: 61.8,
  },
  "@cf/google/embeddinggemma-300m": {
    nativeDimensions: 768,
    matryoshka: true,
    maxInputTokens: 2048,
    tokenizer: "bytes",
    maxTexts: FEWEST_TEXTS,
    input: "prompted-text",
    retrieval: 55.7,
  },
  "@cf/baai/bge-base-en-v1.5": {
    nativeDimensions: 768,
    matryoshka: false,
    maxInputTokens: 512,
    tokenizer: "wordpiece",
    maxTexts: 100,
    input: "text",
    retrieval: 54.8,
  },
  "@cf/baai/bge-large-en-v1.5": {
    nativeDimensions: 1024,
    matryoshka: false,
    maxInputTokens: 512,
    tokenizer: "wordpiece",
    maxTexts: 100,
    input: "text",
    retrieval: null,
  },
  "@cf/baai/bge-small-en-v1.5": {
    nativeDimensions: 384,
    matryoshka: false,
    maxInputTokens: 512,
    tokenizer: "wordpiece",
    maxTexts: 100,
    input: "text",
    retrieval: null,
  },
  "@cf/baai/bge-m3": {
    nativeDimensions: 1024,
    matryoshka: false,
    maxInputTokens: 8192,
    tokenizer: "sentencepiece",
    maxTexts: FEWEST_TEXTS,
    input: "text",
    retrieval: null,
  },
};

/** Queries are phrased as search instructions (Qwen3's and EmbeddingGemma's model cards). */
export const QUERY_INSTRUCTION =
  "Given a question or keywords, retrieve the stored memories and messages that answer it";

/**
 * Refuses settings the model cannot honour: more dimensions than it has, or fewer when its vectors
 * cannot be cut. Unknown models pass (their vectors' length is checked on the first call).
 */
export function checkEmbeddingSettings(model: string, dimensions: number): void {
  const known = EMBEDDING_MODELS[model];
  if (!known) return;
  if (dimensions > known.nativeDimensions) {
    throw new Error(
      `Configuration error: EMBEDDING_DIMENSIONS is ${dimensions} but ${model} has ${known.nativeDimensions}`,
    );
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
      return {
        text: texts.map((t) =>
          purpose === "query" ? `task: search result | query: ${t}` : `title: none | text: ${t}`,
        ),
      };
    default:
      return { text: texts };
  }
}

/**
 * Input tokens for a model we do not know: the smallest limit among the models we know (bge's 512), counted in
 * UTF-8 bytes (the most any tokenizer makes of a text).
 */
export const FEWEST_INPUT_TOKENS: { maxInputTokens: number; tokenizer: Tokenizer } = {
  maxInputTokens: 512,
  tokenizer: "bytes",
};

/** Special tokens a model adds around a text ([CLS] and [SEP], <s> and </s>, BOS and EOS), with room to spare. */
const SPECIAL_TOKENS = 4;

/**
 * The most tokens the model's tokenizer can make of one character: none of whitespace for WordPiece, its code
 * points after NFD (WordPiece: Hangul syllables become two or three jamo) or NFKC (SentencePiece: a ligature
 * becomes two letters), its UTF-8 bytes for byte-level tokenizers. Normalizing character by character can only
 * count more than normalizing the text (composition joins characters), so sums of these are upper bounds.
 */
function charTokens(tokenizer: Tokenizer, ch: string): number {
  const code = ch.codePointAt(0)!;
  if (code < 0x80) return tokenizer === "wordpiece" && /\s/.test(ch) ? 0 : 1;
  if (tokenizer === "bytes") return Math.max(utf8Bytes(ch), utf8Bytes(ch.normalize("NFC")));
  if (tokenizer === "wordpiece") return /\s/.test(ch) ? 0 : [...ch.normalize("NFD")].length;
  return [...ch.normalize("NFKC")].length;
}

/** A model's input limit and tokenizer kind (an unknown model: FEWEST_INPUT_TOKENS). */
export function inputLimitOf(model: string): { maxInputTokens: number; tokenizer: Tokenizer } {
  return EMBEDDING_MODELS[model] ?? FEWEST_INPUT_TOKENS;
}

/** What the model's input adds to a text of this purpose (a prompt, an instruction, special tokens), in its tokens at most. */
function overhead(model: string, purpose: "query" | "document"): number {
  const { tokenizer } = inputLimitOf(model);
  const count = (text: string) => [...text].reduce((sum, ch) => sum + charTokens(tokenizer, ch), 0);
  switch (EMBEDDING_MODELS[model]?.input) {
    case "queries-documents":
      // Qwen3-Embedding's query template: "Instruct: {instruction}\nQuery:{query}".
      return SPECIAL_TOKENS + (purpose === "query" ? count(`Instruct: ${QUERY_INSTRUCTION}\nQuery:`) : 0);
    case "prompted-text":
      return SPECIAL_TOKENS + count(purpose === "query" ? "task: search result | query: " : "title: none | text: ");
    default:
      return SPECIAL_TOKENS;
  }
}

/**
 * An upper bound of the tokens the model reads for this text, its prompt or instruction and special tokens
 * included, without the model's tokenizer (the Worker does not ship it): the model counts at most this many.
 */
export function inputTokensBound(model: string, text: string, purpose: "query" | "document" = "document"): number {
  const { tokenizer } = inputLimitOf(model);
  let tokens = overhead(model, purpose);
  for (const ch of text) tokens += charTokens(tokenizer, ch);
  return tokens;
}

/**
 * The text as the model can take it: whole when inputTokensBound is within its maxInputTokens, else its longest
 * prefix that is (cut at a character). The bound counts a token per character (WordPiece, SentencePiece) or per
 * byte, where the models make one of ~4 characters of English, so a cut text is shorter than the model could
 * read: bge's 512 tokens are ~500 characters here (a 350-token chunk is ~1,400), qwen3's 8,192 ~8,000 bytes.
 */
export function fitInput(model: string, text: string, purpose: "query" | "document" = "document"): string {
  const { maxInputTokens, tokenizer } = inputLimitOf(model);
  let tokens = overhead(model, purpose);
  // Fast path: a text this short fits whatever it holds (NFKC makes at most 18 characters of one, U+FDFD).
  if (text.length * 18 + tokens <= maxInputTokens) return text;
  let end = 0;
  for (const ch of text) {
    tokens += charTokens(tokenizer, ch);
    if (tokens > maxInputTokens) return text.slice(0, end);
    end += ch.length;
  }
  return text;
}

/**
 * An embedder whose texts are first cut as the Workers AI adapter cuts them for `model` (fitInput): the local
 * embedder, standing in for that model, then meets the same texts production sends and refuses any longer one.
 */
export function fittingInputs(embedder: Embedder, model: string): Embedder {
  return {
    name: embedder.name,
    dimensions: embedder.dimensions,
    semantic: embedder.semantic,
    maxBatch: embedder.maxBatch,
    embed: (texts, purpose = "document") =>
      embedder.embed(
        texts.map((t) => fitInput(model, t, purpose)),
        purpose,
      ),
  };
}
