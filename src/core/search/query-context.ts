import type { SearchStage } from "../../config";
import { indexTokens } from "../../shared/fts-text";
import { STOPWORDS } from "../../shared/stopwords";
import { type DerivedView, parseDerived } from "../memory/derived";
import { asksWhen, type TimeRange, timeMatch, yearsBefore } from "./query-time";
import { SPEAKER_WEIGHT, STATES_TIME_WEIGHT } from "./relevance";
import { rowStatedTimes, type StatedTime, saidAt, statedMatch } from "./stated-times";

/** How many years back a time named without its year is looked for among the candidates. */
const YEARLY_LOOKBACK = 10;

/** What a hit needs for the query's context to weigh it: when it was written, who said it, what it says, the times it states. */
export interface ContextualRow {
  created_at: number;
  speaker: string | null;
  chunk_content: string;
  stated_times?: string | null;
  /** A derived memory's fields as JSON text (derived.ts); null for other items. */
  derived?: string | null;
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
 * A derived memory's time is when it was said (stated-times.ts, saidAt), not when extraction wrote it.
 */
export function queryContext(
  query: string,
  range: TimeRange | null,
  candidates: ContextualRow[],
  stages: ReadonlySet<SearchStage>,
): QueryContext {
  const derived = new WeakMap<ContextualRow, DerivedView | null>();
  const derivedOf = (row: ContextualRow) => {
    let view = derived.get(row);
    if (view === undefined) derived.set(row, (view = parseDerived(row.derived)));
    return view;
  };
  const stated = new WeakMap<ContextualRow, StatedTime[]>();
  const statedOf = (row: ContextualRow) => {
    let times = stated.get(row);
    if (!times) stated.set(row, (times = rowStatedTimes(row, derivedOf(row))));
    return times;
  };
  const timeOf = (row: ContextualRow, within: TimeRange) =>
    Math.max(timeMatch(saidAt(row, derivedOf(row)), within), statedMatch(statedOf(row), within));
  const hasCandidates = (within: TimeRange) => candidates.some((c) => timeOf(c, within) === 1);
  let inRange = range !== null && hasCandidates(range) ? range : null;
  // A time named without its year ("in June") is the latest such time that something was written or said in.
  for (let years = 1; range?.yearly && inRange === null && years <= YEARLY_LOOKBACK; years++) {
    const earlier = yearsBefore(range, years);
    if (hasCandidates(earlier)) inRange = earlier;
  }
  const when = stages.has("when") && asksWhen(query);
  const speakers = stages.has("speaker");
  const asked = askedSpeakers(query, candidates);
  const named = new Map<string, boolean>();
  const speakerNamed = (speaker: string) => {
    let hit = named.get(speaker);
    if (hit === undefined) named.set(speaker, (hit = asked(speaker)));
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

/**
 * The most queryContext's multiplier can be for this query, whatever the candidates: a named time only lowers a hit's
 * score, a named speaker and a question asking when raise it.
 */
export function mostContextMultiplier(query: string, stages: ReadonlySet<SearchStage>): number {
  let most = 1;
  if (stages.has("speaker")) most *= 1 + SPEAKER_WEIGHT;
  if (stages.has("when") && asksWhen(query)) most *= 1 + STATES_TIME_WEIGHT;
  return most;
}

/** Words of a speaker's name that can name them in a query. */
const nameWords = (speaker: string) =>
  indexTokens(speaker.toLowerCase()).filter((w) => w.length > 1 && !STOPWORDS.has(w));
/** Words that join the people a question asks about into one subject ("Jon and Gina"). */
const JOINING = new Set(["and", "or", "both"]);

/**
 * Whether the query asks about a speaker: it names them, and when it names several of the candidates' speakers, they
 * are the first named or joined to the first by "and" ("What did Jon say about Gina's store?" asks about Jon, "How do
 * Jon and Gina destress?" about both): in a question the first person named is its subject.
 */
function askedSpeakers(query: string, candidates: ContextualRow[]): (speaker: string) => boolean {
  const tokens = indexTokens(query.toLowerCase());
  const positionsOf = (speaker: string) => {
    const words = new Set(nameWords(speaker));
    return tokens.flatMap((t, i) => (words.has(t) ? [i] : []));
  };
  const known = [...new Set(candidates.flatMap((c) => (c.speaker ? [c.speaker] : [])))];
  const named = known.map(positionsOf).filter((p) => p.length > 0);
  if (named.length < 2) return (speaker) => positionsOf(speaker).length > 0;
  const starts = named.map((p) => p[0]!).sort((a, b) => a - b);
  const subject = new Set([starts[0]!]);
  for (let i = 1; i < starts.length; i++) {
    const between = tokens.slice(starts[i - 1]! + 1, starts[i]);
    if (!subject.has(starts[i - 1]!) || !between.every((t) => JOINING.has(t))) break;
    subject.add(starts[i]!);
  }
  return (speaker) => positionsOf(speaker).some((p) => subject.has(p));
}
