import type { Embedder, EmbeddingPurpose } from "../ports";
import { CJK_LETTER, NON_CJK_WORD } from "../shared/cjk";
import { STOPWORDS } from "../shared/stopwords";
import { normalize } from "../shared/vector-math";
import { inputLimitOf, inputTokensBound } from "./embedding-models";
import { FeatureCounts, fnvStep, fnvText } from "./feature-counts";

/**
 * Deterministic embedder that needs no model: feature hashing of word unigrams, word bigrams and
 * character trigrams into `dimensions` buckets (signed), log-scaled and L2-normalised. It is lexical:
 * it finds shared words and word pieces (stems, typos, inflections), not synonyms or meaning.
 */
export class LocalEmbedder implements Embedder {
  readonly name = "local-hash";
  readonly semantic = false;

  /**
   * `maxBatch`: the texts one call takes. The Worker passes the configured Workers AI model's (qwen3: 32) and
   * refuses more, as that model does, so local runs batch exactly as production does; alone (benches, tests
   * of the embedder) it has no model to mirror and takes any number.
   */
  constructor(
    readonly dimensions: number,
    readonly maxBatch = Number.POSITIVE_INFINITY,
    /** The Workers AI model it stands in for: a text over that model's input tokens is refused (inputTokensBound). */
    private readonly model?: string,
  ) {}

  async embed(texts: string[], purpose: EmbeddingPurpose = "document"): Promise<Float32Array[]> {
    if (texts.length > this.maxBatch)
      throw new Error(
        `AiError: 5006: input has ${texts.length} items; at most ${this.maxBatch} (the configured embedding model's limit)`,
      );
    if (this.model !== undefined) {
      const { maxInputTokens } = inputLimitOf(this.model);
      texts.forEach((text, i) => {
        const tokens = inputTokensBound(this.model!, text, purpose);
        if (tokens > maxInputTokens)
          throw new Error(
            `AiError: input ${i} may be ${tokens} tokens of ${this.model}; at most ${maxInputTokens} (the configured embedding model's limit)`,
          );
      });
    }
    return texts.map((t) => this.embedOne(t));
  }

  embedOne(text: string): Float32Array {
    const vector = new Float32Array(this.dimensions);
    const words = tokenize(text);
    // Each feature is its hash: value = weight x (1 + ln occurrences), in the bucket and with the sign the
    // hash gives. The hashes are those of the feature texts ("w:word", "b:word next", "c:" + trigram of
    // "^word$"), computed without building the texts.
    let units = 0;
    for (const word of words) units += word.length;
    counts.reset(2 * words.length + units);
    for (let i = 0; i < words.length; i++) {
      const word = words[i]!;
      if (STOPWORDS.has(word)) continue;
      counts.add(fnvText(word, WORD), 1);
      const next = words[i + 1];
      if (next !== undefined && !STOPWORDS.has(next))
        counts.add(fnvText(next, fnvStep(fnvText(word, BIGRAM), SPACE)), 0.5);
      const padded = word.length + 2;
      if (padded > 4) {
        for (let j = 0; j + 3 <= padded; j++) {
          let h = TRIGRAM;
          for (let k = j; k < j + 3; k++)
            h = fnvStep(h, k === 0 ? CARET : k === padded - 1 ? DOLLAR : word.charCodeAt(k - 1));
          counts.add(h, 0.25);
        }
      }
    }
    counts.forEach((h, occurrences, weight) => {
      vector[h % this.dimensions]! += (h & 0x80000000 ? -1 : 1) * weight * (1 + Math.log(occurrences));
    });
    return normalize(vector);
  }
}

/** One table serves every text (embedOne runs to completion). */
const counts = new FeatureCounts();
const WORD = fnvText("w:");
const BIGRAM = fnvText("b:");
const TRIGRAM = fnvText("c:");
const SPACE = " ".charCodeAt(0);
const CARET = "^".charCodeAt(0);
const DOLLAR = "$".charCodeAt(0);

const WORDS = new RegExp(`${CJK_LETTER}|${NON_CJK_WORD}`, "gu");

/** Lower-cased letter/digit runs; each CJK character is its own word. */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(WORDS) ?? [];
}
