import { STOPWORDS } from "../shared/stopwords";

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
}

const DAY = 86_400_000;
const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
const MONTH = "(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\\.?";
const DAY_NUMBER = "(\\d{1,2})(?:st|nd|rd|th)?";
const YEAR = "(\\d{4})";
const NUMBER_WORDS: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, couple: 2, few: 3 };

const monthIndex = (name: string) => MONTHS.findIndex((m) => m.startsWith(name.toLowerCase().replace(".", "").slice(0, 3)));
const dayRange = (year: number, month: number, day: number) => ({ from: Date.UTC(year, month, day), to: Date.UTC(year, month, day + 1) });
const validDay = (year: number, month: number, day: number) => month >= 0 && day >= 1 && new Date(Date.UTC(year, month, day)).getUTCDate() === day;

type Rule = { pattern: RegExp; range: (m: RegExpMatchArray, now: number) => { from: number; to: number } | null };

/** Absolute dates first (the most specific), then relative ones, which count back from `now` (UTC days). */
const RULES: Rule[] = [
  { pattern: /\b(\d{4})-(\d{2})-(\d{2})\b/, range: (m) => dayIf(+m[1]!, +m[2]! - 1, +m[3]!) },
  { pattern: new RegExp(`\\b${DAY_NUMBER}\\s+(?:of\\s+)?${MONTH},?\\s+${YEAR}\\b`, "i"), range: (m) => dayIf(+m[3]!, monthIndex(m[2]!), +m[1]!) },
  { pattern: new RegExp(`\\b${MONTH}\\s+${DAY_NUMBER},?\\s+${YEAR}\\b`, "i"), range: (m) => dayIf(+m[3]!, monthIndex(m[1]!), +m[2]!) },
  { pattern: new RegExp(`\\b${MONTH},?\\s+${YEAR}\\b`, "i"), range: (m) => ({ from: Date.UTC(+m[2]!, monthIndex(m[1]!), 1), to: Date.UTC(+m[2]!, monthIndex(m[1]!) + 1, 1) }) },
  { pattern: /\b(?:in|during|of|from|since)\s+(?:the\s+year\s+)?(\d{4})\b/i, range: (m) => ({ from: Date.UTC(+m[1]!, 0, 1), to: Date.UTC(+m[1]! + 1, 0, 1) }) },
  // A day of a month without a year: its latest occurrence up to today.
  {
    pattern: new RegExp(`\\b(?:on\\s+)?(?:${DAY_NUMBER}\\s+(?:of\\s+)?${MONTH}|${MONTH}\\s+${DAY_NUMBER})\\b`, "i"),
    range: (m, now) => {
      const month = monthIndex(m[2] ?? m[3]!);
      const day = +(m[1] ?? m[4]!);
      const year = new Date(now).getUTCFullYear();
      for (const y of [year, year - 1]) if (validDay(y, month, day) && Date.UTC(y, month, day) <= now) return dayRange(y, month, day);
      return null;
    },
  },
  { pattern: /\b(?:today|tonight|this morning|this afternoon|this evening)\b/i, range: (_, now) => daysBack(now, 0, 1) },
  { pattern: /\byesterday\b/i, range: (_, now) => daysBack(now, 1, 1) },
  { pattern: /\bthe day before yesterday\b/i, range: (_, now) => daysBack(now, 2, 1) },
  {
    pattern: /\b(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)\s+(day|week|month|year)s?\s+ago\b/i,
    range: (m, now) => {
      const n = /^\d+$/.test(m[1]!) ? +m[1]! : NUMBER_WORDS[m[1]!.toLowerCase().replace(/^a (couple|few) of$/, "$1")] ?? 1;
      const unit = { day: 1, week: 7, month: 30, year: 365 }[m[2]!.toLowerCase() as "day"]! * DAY;
      const centre = startOfDay(now) - n * unit;
      return { from: centre - Math.max(DAY, unit / 2), to: centre + Math.max(DAY, unit / 2) };
    },
  },
  { pattern: /\b(this|last|past|previous)\s+week\b/i, range: (m, now) => weekRange(now, /this/i.test(m[1]!) ? 0 : 1) },
  { pattern: /\b(this|last|past|previous)\s+weekend\b/i, range: (m, now) => weekendRange(now, /this/i.test(m[1]!) ? 0 : 1) },
  { pattern: /\b(this|last|past|previous)\s+month\b/i, range: (m, now) => monthRange(now, /this/i.test(m[1]!) ? 0 : 1) },
  { pattern: /\b(this|last|past|previous)\s+year\b/i, range: (m, now) => yearRange(now, /this/i.test(m[1]!) ? 0 : 1) },
  {
    pattern: /\b(?:last|on)\s+(sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b/i,
    range: (m, now) => {
      const back = (new Date(now).getUTCDay() - WEEKDAYS.indexOf(m[1]!.toLowerCase()) + 7) % 7 || 7;
      return daysBack(now, back, 1);
    },
  },
];

/** The first time the query names, as a range of instants, or null. */
export function queryTimeRange(query: string, now: number): TimeRange | null {
  for (const rule of RULES) {
    const match = query.match(rule.pattern);
    if (!match) continue;
    const range = rule.range(match, now);
    if (range && Number.isFinite(range.from) && Number.isFinite(range.to) && range.to > range.from) return { ...range, text: match[0] };
  }
  return null;
}

/** A time outside the range keeps at least this share of its score: people misplace dates. */
export const OUTSIDE_RANGE_FLOOR = 0.5;

/**
 * How well an instant matches the range: 1 inside; outside, decaying towards OUTSIDE_RANGE_FLOOR with
 * a half-life of a quarter of the range (at least a day), so "in 2023" forgives more than "on 3 June".
 * Measured on LoCoMo (evidence recall@10, all other stages on): a fixed 7-day half-life 80.5%, a
 * quarter of the range 80.7%; floor 0.3 / 0.5 / 0.7: 80.7 / 80.5 / 79.9%.
 */
export function timeMatch(at: number, range: TimeRange): number {
  if (at >= range.from && at < range.to) return 1;
  const distance = at < range.from ? range.from - at : at - range.to;
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
  return /^\W*(?:and\s+|so\s+|but\s+)?(?:when\b|since when\b|(?:what|which)\s+(?:date|day|year|month|time)\b|how long ago\b)/i.test(query);
}

const STATES_TIME = new RegExp(
  [
    "yesterday|today|tonight|tomorrow|ago|recently|lately|since|weekend",
    "(?:last|this|next|past)\\s+(?:night|week|month|year|summer|winter|spring|fall|autumn|" + WEEKDAYS.join("|") + ")",
    WEEKDAYS.join("|"),
    // month names, except May (mostly the verb)
    MONTHS.filter((m) => m !== "may").join("|"),
    "(?:19|20)\\d{2}",
    "\\d{1,2}(?::\\d{2})?\\s*(?:am|pm)",
  ]
    .map((p) => `(?:${p})`)
    .join("|")
    .replace(/^/, "\\b(?:")
    .concat(")\\b"),
  "i",
);

/** The text states a time: a date, a weekday, a month, a year, or a relative time ("last week"). */
export function statesTime(text: string): boolean {
  return STATES_TIME.test(text);
}

function dayIf(year: number, month: number, day: number) {
  return validDay(year, month, day) ? dayRange(year, month, day) : null;
}

function startOfDay(now: number): number {
  return Math.floor(now / DAY) * DAY;
}

function daysBack(now: number, days: number, length: number) {
  const from = startOfDay(now) - days * DAY;
  return { from, to: from + length * DAY };
}

/** Weeks start on Monday; `back` weeks before the current one. */
function weekRange(now: number, back: number) {
  const monday = startOfDay(now) - ((new Date(now).getUTCDay() + 6) % 7) * DAY;
  return { from: monday - back * 7 * DAY, to: monday - (back - 1) * 7 * DAY };
}

function weekendRange(now: number, back: number) {
  const week = weekRange(now, back);
  return { from: week.from + 5 * DAY, to: week.to };
}

function monthRange(now: number, back: number) {
  const d = new Date(now);
  return { from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back, 1), to: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back + 1, 1) };
}

function yearRange(now: number, back: number) {
  const year = new Date(now).getUTCFullYear() - back;
  return { from: Date.UTC(year, 0, 1), to: Date.UTC(year + 1, 0, 1) };
}
