import type { SearchStage } from "../../config";
import { indexTokens } from "../shared/fts-text";
import { STOPWORDS } from "../shared/stopwords";
import { asksWhen, timeMatch, yearsBefore, type TimeRange } from "./query-time";
import { statedMatch, statedTimes, type StatedTime } from "./stated-times";
import { SPEAKER_WEIGHT, STATES_TIME_WEIGHT } from "./relevance";

/** How many years back a time named without its year is looked for among the candidates. */
const YEARLY_LOOKBACK = 10;

/** What a hit needs for the query's context to weigh it: when it was written, who said it, what it says, the times it states. */
export interface ContextualRow {
  created_at: number;
  speaker: string | null;
  chunk_content: string;
  stated_times?: string | null;
}

export interface QueryContext {
  /** The time the query names, when some candidate falls in it (else it says nothing about them). */
  range: TimeRange | null;
  /** A hit's score multiplier from the query's context: its time, its speaker, whether it states a time. */
  multiplier(row: ContextualRow): number;
}

/**
 * What the query says besides its words, weighed on each candidate:
 * - a time it names (query-time.ts): hits written then, or stating that time (stated-times.ts: a message
 *   of 8 May saying "yesterday" for 7 May), keep their score, others lose up to half; only when some
 *   candidate falls in that time, since otherwise the words name something other than when things were
 *   stored ("my trip last year", asked of an older conversation);
 * - a speaker it names: messages said by that participant (log_chat's agent_name, else the role) gain;
 * - a question asking when: text that states a time (one resolved at write time) gains.
 */
export function queryContext(query: string, range: TimeRange | null, candidates: ContextualRow[], stages: ReadonlySet<SearchStage>): QueryContext {
  const stated = new WeakMap<ContextualRow, StatedTime[]>();
  const statedOf = (row: ContextualRow) => {
    let times = stated.get(row);
    if (!times) stated.set(row, (times = statedTimes(row)));
    return times;
  };
  const timeOf = (row: ContextualRow, within: TimeRange) => Math.max(timeMatch(row.created_at, within), statedMatch(statedOf(row), within));
  const hasCandidates = (within: TimeRange) => candidates.some((c) => timeOf(c, within) === 1);
  let inRange = range !== null && hasCandidates(range) ? range : null;
  // A time named without its year ("in June") is the latest such time that something was written or said in.
  for (let years = 1; range?.yearly && inRange === null && years <= YEARLY_LOOKBACK; years++) {
    const earlier = yearsBefore(range, years);
    if (hasCandidates(earlier)) inRange = earlier;
  }
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
      let m = inRange ? timeOf(row, inRange) : 1;
      if (speakers && row.speaker && speakerNamed(row.speaker)) m *= 1 + SPEAKER_WEIGHT;
      if (when && statedOf(row).length > 0) m *= 1 + STATES_TIME_WEIGHT;
      return m;
    },
  };
}
