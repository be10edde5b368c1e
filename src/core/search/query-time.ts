import { STOPWORDS } from "../../shared/stopwords";
import { type FoundTime, findTimes, shiftYears } from "./time-expressions";

/**
 * Time in a query. Stored items carry the time they were said or written (log_chat's `timestamp`,
 * created_at), so a date in a query is matched against those times rather than against words: a
 * message saying "I went yesterday", written on 8 May 2023, answers "what happened on 8 May 2023?"
 * though it holds none of those words. And a question that asks *when* is best answered by text that
 * states a time ("last Sunday", "in 2022").
 */

export interface TimeRange {
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  /** The words of the query that named it. */
  text: string;
  /** Named without its year ("in June"): the latest year that has something then is meant (query-context.ts). */
  yearly?: boolean;
}

const DAY = 86_400_000;

/** The time the query names (the most specific, then the first), as a range of instants, or null. */
export function queryTimeRange(query: string, now: number): TimeRange | null {
  const best = findTimes(query, now, "past").reduce<FoundTime | null>(
    (b, f) => (b === null || f.rank < b.rank ? f : b),
    null,
  );
  return best && { from: best.from, to: best.to, text: best.text, ...(best.yearly ? { yearly: true } : {}) };
}

/** The range a year earlier, or `years` earlier ("in June" asked of last year's notes). */
export function yearsBefore(range: TimeRange, years: number): TimeRange {
  return { ...range, from: shiftYears(range.from, -years), to: shiftYears(range.to, -years) };
}

/** A time outside the range keeps at least this share of its score: people misplace dates. */
export const OUTSIDE_RANGE_FLOOR = 0.5;

/**
 * How well an instant matches the range: 1 inside; outside, decaying towards OUTSIDE_RANGE_FLOOR with
 * a half-life of a quarter of the range (at least a day), so "in 2023" forgives more than "on 3 June".
 */
export function timeMatch(at: number, range: TimeRange): number {
  return spanMatch(at, at + 1, range);
}

/** timeMatch for a span of time [from, to) (a time the text states): 1 where it overlaps the range. */
export function spanMatch(from: number, to: number, range: TimeRange): number {
  if (from < range.to && to > range.from) return 1;
  const distance = to <= range.from ? range.from - (to - 1) : from - range.to;
  const halfLife = Math.max(DAY, (range.to - range.from) / 4);
  return OUTSIDE_RANGE_FLOOR + (1 - OUTSIDE_RANGE_FLOOR) * 0.5 ** (distance / halfLife);
}

/**
 * The query with the words that named its time taken out (they are matched against times, not text),
 * unless no content word would be left ("what happened in 2023?" keeps its words).
 */
export function withoutTimeWords(query: string, range: TimeRange | null): string {
  if (!range) return query;
  const rest = query.replace(range.text, " ");
  const words = rest.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.some((w) => !STOPWORDS.has(w) && !/^happen/.test(w)) ? rest : query;
}

/** The question asks for a time ("When did ...", "What year ...", "How long ago ..."). */
export function asksWhen(query: string): boolean {
  return /^\W*(?:and\s+|so\s+|but\s+)?(?:when\b|since when\b|(?:what|which)\s+(?:date|day|year|month|time)\b|how long ago\b)/i.test(
    query,
  );
}
