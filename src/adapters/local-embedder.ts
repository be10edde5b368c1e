import type { Embedder } from "../ports";
import { CJK_LETTER, NON_CJK_WORD } from "../core/shared/cjk";
import { STOPWORDS } from "../core/shared/stopwords";
import { normalize } from "../core/shared/vector-math";

/**
 * Deterministic embedder that needs no model: feature hashing of word unigrams, word bigrams and
 * character trigrams into `dimensions` buckets (signed), log-scaled and L2-normalised. It is lexical:
 * it finds shared words and word pieces (stems, typos, inflections), not synonyms or meaning.
 */
export class LocalEmbedder implements Embedder {
  readonly name = "local-hash";
  readonly maxBatch = 1000;
  readonly semantic = false;

  constructor(readonly dimensions: number) {}

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  embedOne(text: string): Float32Array {
    const vector = new Float32Array(this.dimensions);
    const words = tokenize(text);
    // feature -> [occurrences, weight per occurrence]; value = weight x (1 + ln occurrences)
    const features = new Map<string, [number, number]>();
    const add = (feature: string, weight: number) => {
      const seen = features.get(feature);
      if (seen) seen[0]++;
      else features.set(feature, [1, weight]);
    };
    for (let i = 0; i < words.length; i++) {
      const word = words[i]!;
      if (STOPWORDS.has(word)) continue;
      add("w:" + word, 1);
      const next = words[i + 1];
      if (next !== undefined && !STOPWORDS.has(next)) add("b:" + word + " " + next, 0.5);
      const padded = `^${word}$`;
      if (padded.length > 4) for (let j = 0; j + 3 <= padded.length; j++) add("c:" + padded.slice(j, j + 3), 0.25);
    }
    for (const [feature, [occurrences, weight]] of features) {
      const h = fnv1a(feature);
      vector[h % this.dimensions]! += (h & 0x80000000 ? -1 : 1) * weight * (1 + Math.log(occurrences));
    }
    return normalize(vector);
  }
}

const WORDS = new RegExp(`${CJK_LETTER}|${NON_CJK_WORD}`, "gu");

/** Lower-cased letter/digit runs; each CJK character is its own word. */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(WORDS) ?? [];
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
