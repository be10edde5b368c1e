import { describe, expect, it } from "vitest";
import { LocalEmbedder, tokenize } from "../../src/adapters/local-embedder";
import { STOPWORDS } from "../../src/shared/stopwords";
import { normalize } from "../../src/shared/vector-math";
import { generatedConversations, generatedPassages } from "../fixtures/generated-text";

// The local embedder counts features by their hash in a reused table (feature-counts.ts) instead of a Map
// keyed by feature text. Vectors already stored were made by the definition below; new ones must match
// them bit for bit, over English passages, conversation turns, other scripts, emoji and code.

/** The embedder's definition: features as texts, counted in a Map, FNV-1a of each text. */
function byFeatureText(text: string, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  const words = tokenize(text);
  const features = new Map<string, [number, number]>();
  const add = (feature: string, weight: number) => {
    const seen = features.get(feature);
    if (seen) seen[0]++;
    else features.set(feature, [1, weight]);
  };
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (STOPWORDS.has(word)) continue;
    add(`w:${word}`, 1);
    const next = words[i + 1];
    if (next !== undefined && !STOPWORDS.has(next)) add(`b:${word} ${next}`, 0.5);
    const padded = `^${word}$`;
    if (padded.length > 4) for (let j = 0; j + 3 <= padded.length; j++) add(`c:${padded.slice(j, j + 3)}`, 0.25);
  }
  for (const [feature, [occurrences, weight]] of features) {
    let h = 0x811c9dc5;
    for (let i = 0; i < feature.length; i++) h = Math.imul(h ^ feature.charCodeAt(i), 0x01000193);
    h >>>= 0;
    vector[h % dimensions]! += (h & 0x80000000 ? -1 : 1) * weight * (1 + Math.log(occurrences));
  }
  return normalize(vector);
}

// Generated passages and turns (test/fixtures/generated-text.ts) stand for English text: made-up words
// among real function words, sentences, capitals, punctuation.
const passages = generatedPassages(1500);
const turns = generatedConversations(3)
  .flat(2)
  .slice(0, 1500)
  .map((turn) => turn.text);
const others = [
  "東京タワーの近くで猫が寝ている。我喜欢猫，也喜欢狗。",
  "안녕하세요, 한국어 문장입니다. 서울에서 만나요!",
  "Привет, мир! مرحبا بالعالم नमस्ते दुनिया",
  "👋🏽 family: 👨‍👩‍👧 flag 🇯🇵 ❤️ — unpaired \ud800 surrogate",
  "function fnv1a(s: string): number { let h = 0x811c9dc5; for (const c of s) h = Math.imul(h ^ c.charCodeAt(0), 16777619); }",
  "the the the the cat cat sat", // repeated features: the log of the count
  `a${" long".repeat(3000)}`, // one text larger than the table's first size
  "",
];

describe("local embedder", () => {
  it("gives every text the vector of its definition, bit for bit", async () => {
    for (const dimensions of [256, 384]) {
      const embedder = new LocalEmbedder(dimensions);
      const texts = [...passages, ...turns, ...others, ...others.reverse()];
      const vectors = await embedder.embed(texts);
      texts.forEach((text, i) => expect(vectors[i], text.slice(0, 60)).toEqual(byFeatureText(text, dimensions)));
    }
  });
});
