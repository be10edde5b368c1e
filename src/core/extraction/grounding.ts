import { comparable } from "./duplicates";
import type { Turn, Window } from "./windows";

/**
 * Words of a memory (stemmed, stop words, the subject's name and digits left out) that the one turn it should cite
 * shares at least, for a memory whose cited turns share none of them to be re-pointed there.
 */
export const REPOINT_MIN_SHARED = 2;

/**
 * A memory's sources checked against its words. Models cite a neighbour of the right turn (a ref off by one, the
 * question instead of the answer), and a wrong source gives the memory the wrong time and the wrong provenance. When
 * none of the cited turns shares a word with the memory (or it cites none the window holds), and exactly one turn of
 * the window shares the most, at least REPOINT_MIN_SHARED, the memory is re-pointed to that turn. A memory that paraphrases its turns in other words, or
 * whose words several turns share alike, keeps what it cites.
 */
export function groundedSources(
  memory: { subject: string; text: string },
  sources: Turn[],
  window: Window,
): { sources: Turn[]; note: string | null } {
  const words = memoryWords(memory);
  if (words.size < REPOINT_MIN_SHARED) return { sources, note: null };
  if (sources.some((turn) => shared(words, turn) > 0)) return { sources, note: null };
  const scored = [...window.refs].map(([ref, turn]) => ({ ref, turn, shared: shared(words, turn) }));
  const best = Math.max(...scored.map((s) => s.shared));
  const winners = scored.filter((s) => s.shared === best);
  if (best < REPOINT_MIN_SHARED || winners.length !== 1) return { sources, note: null };
  const cited = [...window.refs].filter(([, turn]) => sources.includes(turn)).map(([ref]) => ref);
  const to = winners[0]!;
  const why =
    cited.length === 0
      ? "no source the window holds was given"
      : `sources ${cited.join(", ")} read as ${to.ref}: no word of the memory is in ${cited.length > 1 ? "them" : "it"}`;
  return { sources: [to.turn], note: `${why}, ${to.shared} of its words in ${to.ref}` };
}

function memoryWords(memory: { subject: string; text: string }): Set<string> {
  const name = comparable(memory.subject).terms;
  return new Set([...comparable(memory.text).terms].filter((w) => !name.has(w) && !/\d/.test(w)));
}

/** Each turn's words, computed once however many memories of the window are checked against it. */
const turnWords = new WeakMap<Turn, Set<string>>();

function shared(words: ReadonlySet<string>, turn: Turn): number {
  let terms = turnWords.get(turn);
  if (terms === undefined) {
    terms = comparable(turn.content).terms;
    turnWords.set(turn, terms);
  }
  let n = 0;
  for (const w of terms) if (words.has(w)) n++;
  return n;
}
