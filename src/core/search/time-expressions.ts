import {
  around,
  DAY,
  dayIf,
  days,
  type Lean,
  monthDay,
  monthRange,
  occurrence,
  type Range,
  seasonRange,
  shiftYears,
  startOfDay,
  validDay,
  WEEKDAYS,
  weekdayRange,
  weekendRange,
  weekOfMonth,
  weekRange,
  yearly,
  yearOf,
  yearRange,
} from "./calendar-ranges";

export { type Lean, shiftYears } from "./calendar-ranges";

/**
 * Times that text names, resolved against the instant it was said: "yesterday" in a message written on
 * 8 May 2023 is 7 May 2023; "in two weeks" from a note of 1 March is mid-March. One grammar serves stored
 * text (resolved at write time against the item's time, stated-times.ts) and queries (against now,
 * query-time.ts). Every time is a range of instants, [from, to) in epoch ms, counted in UTC days ("two weeks ago"
 * is the week around the day fourteen days back).
 */

export interface FoundTime {
  from: number;
  to: number;
  /** The words that named it, and where they start. */
  text: string;
  index: number;
  /** Its rule's rank: a lower one is more specific (an absolute date before a relative one). */
  rank: number;
  /** Named without its year ("on 3 June", "in June"): the same days of another year may be meant. */
  yearly: boolean;
}

const MONTHS = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december",
];
const MONTH =
  "(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\\.?";
/** A month name outside a date: "may" is mostly the verb, and the short forms are words too ("mar", "sep"). */
const MONTH_WORD = "(january|february|march|april|may|june|july|august|september|october|november|december)";
const WEEKDAY = `(${WEEKDAYS.join("|")})`;
/** A weekday as a name or its short form ("last Tues."): the short forms are words too ("sun", "sat"), so only after a word that makes them days. */
const WEEKDAY_OR_SHORT =
  "(sunday|monday|tuesday|wednesday|thursday|friday|saturday|sun|mon|tues|tue|wed|thurs|thur|thu|fri|sat)\\b\\.?";
const DAY_NUMBER = "(\\d{1,2})(?:st|nd|rd|th)?";
const YEAR = "(\\d{4})";
const COUNT = "(\\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|several)";
const NUMBER_WORDS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  "a couple of": 2,
  "a few": 3,
  several: 3,
};
const UNIT_DAYS = { day: 1, week: 7, month: 30, year: 365 } as const;

/**
 * A rule: its pattern, what its match names, and what any match of it holds (each of `needs`: a digit, a year, one of
 * a few words): the text is searched for those first, a small part of running the pattern, and most texts name no time.
 */
type Rule = { needs: Need[]; pattern: string; range: (m: RegExpExecArray, ref: number, lean: Lean) => Range | null };
/** Something a match holds: a pattern, or one of some words (searched for in the lower-cased text). */
type Need = RegExp | readonly string[];
const DIGIT = /\d/;
const YEAR_DIGITS = /\d{4}/;
const MONTH_NAME = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const UNIT = ["day", "week", "month", "year"];

const monthIndex = (name: string) =>
  MONTHS.findIndex((m) => m.startsWith(name.toLowerCase().replace(".", "").slice(0, 3)));
const count = (word: string) =>
  /^\d+$/.test(word) ? Number(word) : (NUMBER_WORDS[word.toLowerCase().replace(/\s+/g, " ")] ?? 1);
const direction = (word: string) => (/^(?:last|past|previous)$/i.test(word) ? -1 : /^next$/i.test(word) ? 1 : 0);

/** The rules, most specific first; where two match the same words, the earlier rule's reading stands. */
const RULES: Rule[] = [
  { needs: [/\d{4}-\d/], pattern: "\\b(\\d{4})-(\\d{2})-(\\d{2})\\b", range: (m) => dayIf(+m[1]!, +m[2]! - 1, +m[3]!) },
  {
    needs: [YEAR_DIGITS, MONTH_NAME],
    pattern: `\\b${DAY_NUMBER}\\s+(?:of\\s+)?${MONTH},?\\s+${YEAR}\\b`,
    range: (m) => dayIf(+m[3]!, monthIndex(m[2]!), +m[1]!),
  },
  {
    needs: [YEAR_DIGITS, MONTH_NAME],
    pattern: `\\b${MONTH}\\s+${DAY_NUMBER},?\\s+${YEAR}\\b`,
    range: (m) => dayIf(+m[3]!, monthIndex(m[1]!), +m[2]!),
  },
  // "the second week of November (2023)": days 1-7, 8-14, 15-21, 22-28, or the month's last seven.
  {
    needs: [["week"], MONTH_NAME],
    pattern: `\\b(?:the\\s+)?(first|second|third|fourth|last)\\s+week\\s+(?:of|in)\\s+${MONTH}(?:,?\\s+${YEAR})?\\b`,
    range: (m, ref, lean) => {
      const inYear = (year: number) => weekOfMonth(year, monthIndex(m[2]!), m[1]!.toLowerCase());
      return m[3] ? inYear(+m[3]) : yearly(occurrence(ref, lean, inYear));
    },
  },
  {
    needs: [YEAR_DIGITS, MONTH_NAME],
    pattern: `\\b${MONTH},?\\s+${YEAR}\\b`,
    range: (m) => monthRange(+m[2]!, monthIndex(m[1]!)),
  },
  {
    needs: [YEAR_DIGITS],
    pattern: "\\b(?:in|during|of|from|since|back in)\\s+(?:the\\s+year\\s+)?(\\d{4})\\b",
    range: (m) => yearRange(+m[1]!),
  },
  // A day of a month without its year.
  {
    needs: [DIGIT, MONTH_NAME],
    pattern: `\\b(?:on\\s+)?(?:${DAY_NUMBER}\\s+(?:of\\s+)?${MONTH}|${MONTH}\\s+${DAY_NUMBER})\\b`,
    range: (m, ref, lean) =>
      yearly(
        occurrence(ref, lean, (year) =>
          validDay(year, monthIndex(m[2] ?? m[3]!), +(m[1] ?? m[4]!))
            ? dayIf(year, monthIndex(m[2] ?? m[3]!), +(m[1] ?? m[4]!))
            : null,
        ),
      ),
  },
  // "on the 15th": a day of the month it is said in, or of the month before or after, whichever is meant by `lean`.
  // Only after a word that makes it a date and before the end of a clause or a word that cannot be its noun, so
  // "on the 3rd floor" is not a day.
  {
    needs: [DIGIT],
    pattern:
      "\\b(?:on|by|since|until|till|before|after)\\s+the\\s+(\\d{1,2})(?:st|nd|rd|th)\\b" +
      "(?=\\s*(?:[,.;:!?)]|$)|\\s+(?:of\\s+(?:this|that|the|next|last)\\s+month|at|in|and|after|before|when|for|with|to|i|we|you|he|she|they|it|my|our)\\b)",
    range: (m, ref, lean) => (+m[1]! >= 1 && +m[1]! <= 31 ? monthDay(ref, lean, +m[1]!) : null),
  },
  {
    needs: [["day"]],
    pattern: "\\bthe\\s+day\\s+before\\s+yesterday\\b",
    range: (_, ref) => days(startOfDay(ref) - 2 * DAY, 1),
  },
  {
    needs: [["day"]],
    pattern: "\\bthe\\s+day\\s+after\\s+tomorrow\\b",
    range: (_, ref) => days(startOfDay(ref) + 2 * DAY, 1),
  },
  {
    needs: [["day", "night"]],
    pattern: "\\b(?:yesterday|last\\s+night)\\b",
    range: (_, ref) => days(startOfDay(ref) - DAY, 1),
  },
  { needs: [["tomorrow"]], pattern: "\\btomorrow\\b", range: (_, ref) => days(startOfDay(ref) + DAY, 1) },
  {
    needs: [["day", "night", "morning", "afternoon", "evening"]],
    pattern: "\\b(?:today|tonight|this\\s+(?:morning|afternoon|evening))\\b",
    range: (_, ref) => days(startOfDay(ref), 1),
  },
  {
    needs: [UNIT],
    pattern: `\\b${COUNT}\\s+(day|week|month|year)s?\\s+(?:ago|back|before\\s+(?:now|today))\\b`,
    range: (m, ref) =>
      around(
        startOfDay(ref) - count(m[1]!) * UNIT_DAYS[m[2]!.toLowerCase() as "day"] * DAY,
        UNIT_DAYS[m[2]!.toLowerCase() as "day"],
      ),
  },
  {
    needs: [UNIT],
    pattern: `\\bin\\s+${COUNT}\\s+(day|week|month|year)s?(?:\\s+time)?\\b`,
    range: (m, ref) =>
      around(
        startOfDay(ref) + count(m[1]!) * UNIT_DAYS[m[2]!.toLowerCase() as "day"] * DAY,
        UNIT_DAYS[m[2]!.toLowerCase() as "day"],
      ),
  },
  {
    needs: [["week"]],
    pattern: `\\b${COUNT}\\s+weekends?\\s+(?:ago|back)\\b`,
    range: (m, ref) => weekendRange(ref, -count(m[1]!)),
  },
  {
    needs: [["week"]],
    pattern: "\\bthe\\s+(week|weekend)\\s+before\\s+last\\b",
    range: (m, ref) => (m[1]!.toLowerCase() === "week" ? weekRange(ref, -2) : weekendRange(ref, -2)),
  },
  // "over the weekend": the last one that has begun (this one, said on a Saturday or Sunday).
  {
    needs: [["week"]],
    pattern: "\\b(?:over|on|at|during)\\s+the\\s+weekend\\b",
    range: (_, ref) => weekendRange(ref, (new Date(ref).getUTCDay() + 6) % 7 >= 5 ? 0 : -1),
  },
  {
    needs: [["day", "night"]],
    pattern: "\\bthe\\s+other\\s+(?:day|night)\\b",
    range: (_, ref) => ({ from: startOfDay(ref) - 7 * DAY, to: startOfDay(ref) }),
  },
  {
    needs: [["week"]],
    pattern: "\\b(this|last|past|previous|next)\\s+weekend\\b",
    range: (m, ref) => weekendRange(ref, direction(m[1]!)),
  },
  {
    needs: [["week"]],
    pattern: "\\b(this|last|past|previous|next)\\s+week\\b",
    range: (m, ref) => weekRange(ref, direction(m[1]!)),
  },
  {
    needs: [["month"]],
    pattern: "\\b(this|last|past|previous|next)\\s+month\\b",
    range: (m, ref) => {
      const d = new Date(ref);
      return monthRange(d.getUTCFullYear(), d.getUTCMonth() + direction(m[1]!));
    },
  },
  {
    needs: [["year"]],
    pattern: "\\b(this|last|past|previous|next)\\s+year\\b",
    range: (m, ref) => yearRange(yearOf(ref) + direction(m[1]!)),
  },
  {
    needs: [["spring", "summer", "fall", "autumn", "winter"]],
    pattern: "\\b(this|last|past|next)\\s+(spring|summer|fall|autumn|winter)\\b",
    range: (m, ref) => seasonRange(ref, m[2]!.toLowerCase(), direction(m[1]!)),
  },
  {
    needs: [["sun", "mon", "tue", "wed", "thu", "fri", "sat"]],
    pattern: `\\b(last|next|this|this\\s+past|on)\\s+${WEEKDAY_OR_SHORT}`,
    range: (m, ref) => weekdayRange(ref, m[2]!, m[1]!.toLowerCase()),
  },
  // A month alone, with a word that makes it a time ("in June", "last March"); its nearest or last occurrence.
  {
    needs: [MONTH_NAME],
    pattern: `\\b(in|during|since|until|by|early|late|mid|last|next|this)[\\s-]+(?:of\\s+)?${MONTH_WORD}\\b`,
    range: (m, ref, lean) => {
      const month = monthIndex(m[2]!);
      // "this may take", "by may": the verb, unless written as a name or after a word only a time follows.
      if (month === 4 && m[2] !== "May" && !/^(?:in|during|early|late|mid|last|next)$/i.test(m[1]!)) return null;
      const dir = direction(m[1]!);
      if (dir !== 0) return occurrence(ref, dir < 0 ? "past" : "future", (year) => monthRange(year, month), true);
      return yearly(occurrence(ref, lean, (year) => monthRange(year, month)));
    },
  },
  // A weekday alone ("Friday was fun"): the last one.
  { needs: [["day"]], pattern: `\\b${WEEKDAY}\\b`, range: (m, ref) => weekdayRange(ref, m[1]!, "on") },
  {
    needs: [["recently", "lately"]],
    pattern: "\\b(?:recently|lately)\\b",
    range: (_, ref) => ({ from: startOfDay(ref) - 30 * DAY, to: startOfDay(ref) + DAY }),
  },
];

/** Every rule's needs, each once (a text is searched for each at most once); a rule names its own by their place here. */
const needKey = (need: Need) => (need instanceof RegExp ? `/${need.source}` : need.join("|"));
const NEEDS: Need[] = [...new Map(RULES.flatMap((rule) => rule.needs).map((need) => [needKey(need), need])).values()];
/**
 * The needs' words, found in one pass over the lower-cased text: at every place (a lookahead, so no word hides one
 * that overlaps it), the longest that starts there, then the words inside it ("mon" in "month").
 */
const NEEDED = [...new Set(NEEDS.flatMap((need) => (need instanceof RegExp ? [] : need)))].sort(
  (a, b) => b.length - a.length,
);
const NEEDED_WORDS = new RegExp(`(?=(${NEEDED.join("|")}))`, "g");
const WORDS_WITHIN = new Map(NEEDED.map((word) => [word, NEEDED.filter((other) => word.includes(other))]));
const COMPILED = RULES.map((rule) => ({
  ...rule,
  needs: rule.needs.map((need) => NEEDS.findIndex((known) => needKey(known) === needKey(need))),
  regex: new RegExp(rule.pattern, "gi"),
}));

/** Every time the text names, each once (a more specific reading wins overlapping words), in reading order. */
export function findTimes(text: string, ref: number, lean: Lean): FoundTime[] {
  const found: FoundTime[] = [];
  const words = new Set<string>();
  for (const m of text.toLowerCase().matchAll(NEEDED_WORDS))
    for (const word of WORDS_WITHIN.get(m[1]!)!) words.add(word);
  const met = new Int8Array(NEEDS.length).fill(-1);
  const holds = (need: number) => {
    if (met[need] === -1) {
      const needed = NEEDS[need]!;
      met[need] = (needed instanceof RegExp ? needed.test(text) : needed.some((word) => words.has(word))) ? 1 : 0;
    }
    return met[need] === 1;
  };
  COMPILED.forEach((rule, rank) => {
    if (!rule.needs.every(holds)) return;
    rule.regex.lastIndex = 0;
    for (let m = rule.regex.exec(text); m !== null; m = rule.regex.exec(text)) {
      const start = m.index;
      const end = start + m[0].length;
      if (found.some((f) => start < f.index + f.text.length && f.index < end)) continue;
      const range = rule.range(m, ref, lean);
      if (range && Number.isFinite(range.from) && Number.isFinite(range.to) && range.to > range.from)
        found.push({ from: range.from, to: range.to, yearly: range.yearly === true, text: m[0], index: start, rank });
    }
  });
  return joinedRanges(
    found.sort((a, b) => a.index - b.index),
    text,
  );
}

/** Between two times: "between", "from" ... "and", "to", "until", "through" or a dash. */
const BEFORE_RANGE = /\b(?:between|from)\s+$/i;
const WITHIN_RANGE = /^\s*(?:and|to|until|till|through|-|–)\s*$/i;

/**
 * "between August 11 and August 15 2023", "from 3 to 10 May" is not read (a bare number is no time), "from Monday to
 * Friday": two times joined into one range from the first's start to the second's end. A first time named without its
 * year takes the second's year (the last one that keeps it before the second).
 */
function joinedRanges(found: FoundTime[], text: string): FoundTime[] {
  const out: FoundTime[] = [];
  for (let i = 0; i < found.length; i++) {
    const a = found[i]!;
    const b = found[i + 1];
    const lead = BEFORE_RANGE.exec(text.slice(Math.max(0, a.index - 12), a.index));
    if (b && lead && WITHIN_RANGE.test(text.slice(a.index + a.text.length, b.index))) {
      let from = a.from;
      if (a.yearly && !b.yearly) {
        const shift = new Date(b.from).getUTCFullYear() - new Date(a.from).getUTCFullYear();
        from = shiftYears(a.from, shift);
        if (from >= b.to) from = shiftYears(a.from, shift - 1);
      }
      if (from < b.to) {
        const start = a.index - lead[0].length;
        out.push({
          from,
          to: b.to,
          yearly: b.yearly,
          text: text.slice(start, b.index + b.text.length),
          index: start,
          rank: Math.min(a.rank, b.rank),
        });
        i++;
        continue;
      }
    }
    out.push(a);
  }
  return out;
}
