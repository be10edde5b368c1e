/**
 * Calendar arithmetic for times named in text (time-expressions.ts): ranges of instants [from, to) in epoch ms,
 * counted in UTC days, and which occurrence of a yearly time a text means.
 */

/**
 * Which occurrence a date without its year (or a month alone) means: a question asks about the past
 * ("what happened on March 3" is the last March 3), stored text may speak of either side ("on 20 May
 * I fly", written on 10 May), so it gets the nearest.
 */
export type Lean = "past" | "nearest";

export type Range = { from: number; to: number; yearly?: boolean };

export const DAY = 86_400_000;
export const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
/** Northern-hemisphere seasons as [first month, months]: summer is June to August. */
const SEASONS: Record<string, [number, number]> = {
  spring: [2, 3],
  summer: [5, 3],
  fall: [8, 3],
  autumn: [8, 3],
  winter: [11, 3],
};

export const startOfDay = (at: number) => Math.floor(at / DAY) * DAY;
export const days = (from: number, length: number): Range => ({ from, to: from + length * DAY });
export const validDay = (year: number, month: number, day: number) =>
  month >= 0 && day >= 1 && new Date(Date.UTC(year, month, day)).getUTCDate() === day;
export const yearOf = (at: number) => new Date(at).getUTCFullYear();

/** The same instant `years` later (earlier when negative), on the same calendar day and time. */
export function shiftYears(at: number, years: number): number {
  const d = new Date(at);
  return Date.UTC(
    d.getUTCFullYear() + years,
    d.getUTCMonth(),
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    d.getUTCMilliseconds(),
  );
}

/** The n-th week of a month as days 1-7, 8-14, 15-21, 22-28, or its last seven days. */
export function weekOfMonth(year: number, month: number, which: string): Range {
  if (which === "last") return { from: Date.UTC(year, month + 1, 1) - 7 * DAY, to: Date.UTC(year, month + 1, 1) };
  const n = ["first", "second", "third", "fourth"].indexOf(which);
  return days(Date.UTC(year, month, 1 + 7 * n), 7);
}

/** A day of the month without the month: in the month of `ref`, the one before or the one after. */
export function monthDay(ref: number, lean: Lean, day: number): Range | null {
  const d = new Date(ref);
  const options = [-1, 0, 1].flatMap((offset) => {
    const first = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + offset, 1));
    return validDay(first.getUTCFullYear(), first.getUTCMonth(), day)
      ? [days(Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), day), 1)]
      : [];
  });
  return pick(options, ref, lean);
}

export function yearly(range: Range | null): Range | null {
  return range && { ...range, yearly: true };
}

export function dayIf(year: number, month: number, day: number): Range | null {
  if (validDay(year, month, day)) return days(Date.UTC(year, month, day), 1);
  // A day the month does not have: the month is still named.
  return month >= 0 && day >= 1 && day <= 31 ? monthRange(year, month) : null;
}

export function monthRange(year: number, month: number): Range {
  return { from: Date.UTC(year, month, 1), to: Date.UTC(year, month + 1, 1) };
}

export function yearRange(year: number): Range {
  return { from: Date.UTC(year, 0, 1), to: Date.UTC(year + 1, 0, 1) };
}

/** A unit's length centred on an instant, at least a day each side: "two weeks ago" is not one day. */
export function around(centre: number, unitDays: number): Range {
  const half = Math.max(DAY, (unitDays * DAY) / 2);
  return { from: centre - half, to: centre + half };
}

/**
 * The occurrence of a yearly time (a day or a month of some year) that `lean` picks: the last one that has
 * begun by `ref` (past), the first that ends after it (future), or whichever is nearer. `strict`: "last
 * March" said in March is the March before.
 */
export function occurrence(
  ref: number,
  lean: Lean | "future",
  inYear: (year: number) => Range | null,
  strict = false,
): Range | null {
  const year = yearOf(ref);
  return pick(
    [year - 1, year, year + 1].map(inYear).filter((r): r is Range => r !== null),
    ref,
    lean,
    strict,
  );
}

/** Of ranges in order, the one `lean` means (occurrence). */
function pick(options: Range[], ref: number, lean: Lean | "future", strict = false): Range | null {
  const today = startOfDay(ref);
  const past = options.filter((r) => (strict ? r.to <= today : r.from <= ref)).at(-1) ?? null;
  const future = options.find((r) => (strict ? r.from > today : r.to > ref)) ?? null;
  if (lean === "past") return past;
  if (lean === "future") return future;
  if (!past || !future) return past ?? future;
  if (past.from <= ref && ref < past.to) return past;
  return ref - past.to <= future.from - ref ? past : future;
}

/** Weeks start on Monday; `offset` weeks from the current one. */
export function weekRange(ref: number, offset: number): Range {
  const monday = startOfDay(ref) - ((new Date(ref).getUTCDay() + 6) % 7) * DAY;
  return days(monday + offset * 7 * DAY, 7);
}

export function weekendRange(ref: number, offset: number): Range {
  const week = weekRange(ref, offset);
  return { from: week.from + 5 * DAY, to: week.to };
}

/** "last summer": the last one over; "next summer": the first to begin; "this summer": the nearest. */
export function seasonRange(ref: number, season: string, offset: number): Range | null {
  const [first, length] = SEASONS[season]!;
  const inYear = (year: number) => ({ from: Date.UTC(year, first, 1), to: Date.UTC(year, first + length, 1) });
  return occurrence(ref, offset < 0 ? "past" : offset > 0 ? "future" : "nearest", inYear, offset !== 0);
}

/** "last Friday" and "on Friday": the one before today (a week back on a Friday); "next" and "this" look ahead. */
export function weekdayRange(ref: number, name: string, word: string): Range {
  const target = WEEKDAYS.findIndex((d) => d.startsWith(name.toLowerCase().replace(".", "").slice(0, 3)));
  const today = new Date(ref).getUTCDay();
  const back = (today - target + 7) % 7 || 7;
  if (word === "next") return days(startOfDay(ref) + ((target - today + 7) % 7 || 7) * DAY, 1);
  if (word === "this") return days(startOfDay(ref) + ((target - today + 7) % 7) * DAY, 1);
  return days(startOfDay(ref) - back * DAY, 1);
}
