import type { SearchStage } from "../../config";
import { indexTokens } from "../shared/fts-text";
import { STOPWORDS } from "../shared/stopwords";
import { asksWhen, statesTime, timeMatch, type TimeRange } from "./query-time";
import { SPEAKER_WEIGHT, STATES_TIME_WEIGHT } from "./relevance";

/** What a hit needs for the query's context to weigh it: when it was written, who said it, what it says. */
export interface ContextualRow {
  created_at: number;
  speaker: string | null;
  chunk_content: string;
}

export interface QueryContext {
  /** The time the query names, when some candidate falls in it (else it says nothing about them). */
  range: TimeRange | null;
  /** A hit's score multiplier from the query's context: its time, its speaker, whether it states a time. */
  multiplier(row: ContextualRow): number;
}

/**
 * What the query says besides its words, weighed on each candidate:
 * - a time it names (query-time.ts): hits written then keep their score, others lose up to half;
 *   only when some candidate falls in that time, since otherwise the words name something other
 *   than when things were stored ("my trip last year", asked of an older conversation);
 * - a speaker it names: messages said by that participant (log_chat's agent_name, else the role) gain;
 * - a question asking when: text that states a time gains.
 */
export function queryContext(query: string, range: TimeRange | null, candidates: ContextualRow[], stages: ReadonlySet<SearchStage>): QueryContext {
  const inRange = range !== null && candidates.some((c) => timeMatch(c.created_at, range) === 1) ? range : null;
  const queryWords = new Set(indexTokens(query.toLowerCase()));
  const when = stages.has("when") && asksWhen(query);
  const speakers = stages.has("speaker");
  const named = new Map<string, boolean>();
  const speakerNamed = (speaker: string) => {
    let hit = named.get(speaker);
    if (hit === undefined) {
      hit = indexTokens(speaker.toLowerCase()).some((w) => w.length > 1 && !STOPWORDS.has(w) && queryWords.has(w));
      named.set(speaker, hit);
    }
    return hit;
  };
  return {
    range: inRange,
    multiplier(row) {
      let m = inRange ? timeMatch(row.created_at, inRange) : 1;
      if (speakers && row.speaker && speakerNamed(row.speaker)) m *= 1 + SPEAKER_WEIGHT;
      if (when && statesTime(row.chunk_content)) m *= 1 + STATES_TIME_WEIGHT;
      return m;
    },
  };
}
