// `npm run bench -- real-text`: the inverted lists' neighbour recall (test/node/inverted-lists.test.ts,
// which runs on generated text) measured on real text: MS MARCO passages and LoCoMo turns from
// ../shared/data. Run through tsx: the adapters are TypeScript.

import { InvertedLists } from "../../src/adapters/inverted-lists";
import { LocalEmbedder } from "../../src/adapters/local-embedder";
import { indexedTurns, neighbourRecall } from "../fixtures/neighbour-recall";
import { loadLocomo, loadMsmarco } from "./data.mjs";

const embedder = new LocalEmbedder(256);
const pct = (x: number) => (100 * x).toFixed(1);
const lines: string[] = [
  "Inverted lists on real text (local embedder, 256 dimensions; exact top-20 neighbours as truth):",
];

const passages = loadMsmarco()
  .corpus.slice(0, 5000)
  .map((d: { text: string }) => d.text);
const passageVectors = new Map((await embedder.embed(passages)).map((v, i) => [i + 1, v]));
const passageLists = InvertedLists.clustered(256, [...passageVectors]);
const both = neighbourRecall(passageVectors, passageLists, passageLists.probesFor(), [0.5, 0.8], 25);
lines.push(
  `  MS MARCO, ${passages.length} passages, ${passageLists.probesFor()} lists probed: ≥ 0.5 found ${pct(both.recall[0]!)}% of ${both.pairs[0]}, ≥ 0.8 ${pct(both.recall[1]!)}% of ${both.pairs[1]}; compared ${pct(both.scannedShare)}% of the vectors`,
);
const documents = neighbourRecall(passageVectors, passageLists, passageLists.probesFor(0.8), [0.8], 25);
lines.push(
  `  MS MARCO at documents' threshold, ${passageLists.probesFor(0.8)} lists probed: ≥ 0.8 found ${pct(documents.recall[0]!)}%; compared ${pct(documents.scannedShare)}%`,
);

const conversations = loadLocomo().map(({ conversation }: { conversation: Record<string, unknown> }) => {
  const sessions: { speaker: string; text: string }[][] = [];
  for (let n = 1; conversation[`session_${n}`]; n++)
    sessions.push(conversation[`session_${n}`] as { speaker: string; text: string }[]);
  return sessions;
});
const turns = indexedTurns(conversations);
const turnVectors = new Map((await embedder.embed(turns)).map((v, i) => [i + 1, v]));
const turnLists = InvertedLists.clustered(256, [...turnVectors]);
const chat = neighbourRecall(turnVectors, turnLists, turnLists.probesFor(0.6), [0.6], 7);
lines.push(
  `  LoCoMo, ${turns.length} turns, ${turnLists.probesFor(0.6)} lists probed: ≥ 0.6 (conversations' threshold) found ${pct(chat.recall[0]!)}% of ${chat.pairs[0]}; compared ${pct(chat.scannedShare)}%`,
);
console.log(lines.join("\n"));
