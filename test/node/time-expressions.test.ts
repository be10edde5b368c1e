import { describe, expect, it } from "vitest";
import { findTimes, type Lean } from "../../src/core/search/time-expressions";

// Properties of the time grammar (src/core/search/time-expressions.ts) over many random reference instants:
// what each kind of expression must resolve to, whatever the day it is said on. Seeded, so a failure repeats.

const DAY = 86_400_000;
const RUNS = 400;
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
const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
/** Words that name no time, to surround expressions with and to make sentences of. */
const FILLER =
  "we went to the park and she said it was great but the dog ran off so I painted a picture of my kids at home with friends".split(
    " ",
  );

function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return {
    int,
    pick: <T>(xs: readonly T[]) => xs[int(0, xs.length - 1)]!,
    instant: () => Date.UTC(1990, 0, 1) + Math.floor(next() * 70 * 365 * DAY),
  };
}

const startOfDay = (at: number) => Math.floor(at / DAY) * DAY;
const one = (text: string, ref: number, lean: Lean = "past") => {
  const found = findTimes(text, ref, lean);
  expect(found, `${text} @ ${new Date(ref).toISOString()}`).toHaveLength(1);
  return found[0]!;
};
const capital = (word: string) => word[0]!.toUpperCase() + word.slice(1);

describe("time expressions, resolved against any instant", () => {
  it("days around the one it is said on: yesterday, today, tomorrow, n days ago", () => {
    const r = random(1);
    for (let i = 0; i < RUNS; i++) {
      const ref = r.instant();
      const today = startOfDay(ref);
      expect(one("yesterday", ref)).toMatchObject({ from: today - DAY, to: today });
      expect(one("the day before yesterday", ref)).toMatchObject({ from: today - 2 * DAY, to: today - DAY });
      expect(one("tonight", ref)).toMatchObject({ from: today, to: today + DAY });
      expect(one("tomorrow", ref)).toMatchObject({ from: today + DAY, to: today + 2 * DAY });
      const n = r.int(1, 300);
      const ago = one(`${n} days ago`, ref);
      expect(ago.from).toBeLessThanOrEqual(today - n * DAY);
      expect(ago.to).toBeGreaterThan(today - n * DAY);
      expect(ago.to - ago.from).toBe(2 * DAY);
      const weeks = one(`${n} weeks ago`, ref);
      expect(weeks.from).toBeLessThan(today - n * 7 * DAY);
      expect(weeks.to).toBeGreaterThan(today - n * 7 * DAY);
      expect(weeks.to - weeks.from).toBe(7 * DAY);
    }
  });

  it("weekdays: 'last' and 'on' look back one to seven days, 'next' ahead, and land on that weekday", () => {
    const r = random(2);
    for (let i = 0; i < RUNS; i++) {
      const ref = r.instant();
      const today = startOfDay(ref);
      const target = r.int(0, 6);
      const name = r.pick([WEEKDAYS[target]!, capital(WEEKDAYS[target]!), `${WEEKDAYS[target]!.slice(0, 3)}.`]);
      for (const [word, sign] of [
        ["last", -1],
        ["on", -1],
        ["next", 1],
      ] as const) {
        const day = one(`${word} ${name}`, ref);
        expect(day.to - day.from).toBe(DAY);
        expect(new Date(day.from).getUTCDay()).toBe(target);
        const distance = (sign * (day.from - today)) / DAY;
        expect(distance).toBeGreaterThanOrEqual(1);
        expect(distance).toBeLessThanOrEqual(7);
      }
    }
  });

  it("weeks, months and years: calendar ones, weeks starting on Monday", () => {
    const r = random(3);
    for (let i = 0; i < RUNS; i++) {
      const ref = r.instant();
      const d = new Date(ref);
      const monday = startOfDay(ref) - ((d.getUTCDay() + 6) % 7) * DAY;
      expect(one("last week", ref)).toMatchObject({ from: monday - 7 * DAY, to: monday });
      expect(one("next week", ref)).toMatchObject({ from: monday + 7 * DAY, to: monday + 14 * DAY });
      expect(one("last weekend", ref)).toMatchObject({ from: monday - 2 * DAY, to: monday });
      // "over the weekend": the last weekend that has begun by then.
      const weekend = one("over the weekend", ref);
      expect(weekend.to - weekend.from).toBe(2 * DAY);
      expect(new Date(weekend.from).getUTCDay()).toBe(6);
      expect(weekend.from).toBeLessThanOrEqual(ref);
      expect(ref - weekend.from).toBeLessThan(7 * DAY);
      expect(one("last month", ref)).toMatchObject({
        from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1),
        to: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
      });
      expect(one("this year", ref)).toMatchObject({
        from: Date.UTC(d.getUTCFullYear(), 0, 1),
        to: Date.UTC(d.getUTCFullYear() + 1, 0, 1),
      });
    }
  });

  it("a full date is that day whenever it is said; an impossible day names its month", () => {
    const r = random(4);
    for (let i = 0; i < RUNS; i++) {
      const year = r.int(1950, 2090);
      const month = r.int(0, 11);
      const day = r.int(1, 31);
      const valid = new Date(Date.UTC(year, month, day)).getUTCDate() === day;
      const expected = valid
        ? { from: Date.UTC(year, month, day), to: Date.UTC(year, month, day + 1) }
        : { from: Date.UTC(year, month, 1), to: Date.UTC(year, month + 1, 1) };
      const name = r.pick([MONTHS[month]!, capital(MONTHS[month]!)]);
      for (const text of [`${day} ${name} ${year}`, `${name} ${day}, ${year}`, `${day}th of ${name}, ${year}`]) {
        expect(one(text, r.instant())).toMatchObject({ ...expected, yearly: false });
      }
    }
  });

  it("two times joined ('between ... and ...', 'from ... to ...') are one range from the first's start to the second's end", () => {
    const r = random(8);
    for (let i = 0; i < RUNS; i++) {
      const year = r.int(1950, 2090);
      const a = Date.UTC(year, r.int(0, 11), r.int(1, 28));
      const b = a + r.int(1, 300) * DAY;
      const name = (at: number) =>
        `${new Date(at).getUTCDate()} ${MONTHS[new Date(at).getUTCMonth()]} ${new Date(at).getUTCFullYear()}`;
      const [lead, join] = r.pick([
        ["between", "and"],
        ["from", "to"],
        ["from", "until"],
      ] as const);
      const text = `what happened ${lead} ${name(a)} ${join} ${name(b)}?`;
      expect(one(text, r.instant())).toMatchObject({
        from: a,
        to: b + DAY,
        text: `${lead} ${name(a)} ${join} ${name(b)}`,
      });
      // Backwards, they are two times.
      expect(findTimes(`${lead} ${name(b)} ${join} ${name(a)}`, r.instant(), "past")).toHaveLength(2);
      // A week of a month: seven days inside it.
      const week = one(
        `the ${r.pick(["first", "second", "third", "fourth", "last"])} week of ${MONTHS[new Date(a).getUTCMonth()]} ${year}`,
        r.instant(),
      );
      expect(week.to - week.from).toBe(7 * DAY);
      expect(new Date(week.from).getUTCMonth()).toBe(new Date(a).getUTCMonth());
      expect(new Date(week.to - 1).getUTCMonth()).toBe(new Date(a).getUTCMonth());
    }
  });

  it("a day or a month without its year: the last one that has begun (past), or the nearest", () => {
    const r = random(5);
    for (let i = 0; i < RUNS; i++) {
      const ref = r.instant();
      const month = r.int(0, 11);
      const day = r.int(1, 28);
      const past = one(`on ${capital(MONTHS[month]!)} ${day}`, ref, "past");
      expect(past).toMatchObject({ yearly: true });
      expect(new Date(past.from).getUTCMonth()).toBe(month);
      expect(new Date(past.from).getUTCDate()).toBe(day);
      expect(past.from).toBeLessThanOrEqual(ref);
      expect(ref - past.from).toBeLessThan(366 * DAY);
      const nearest = one(`on ${capital(MONTHS[month]!)} ${day}`, ref, "nearest");
      expect(Math.abs(nearest.from + DAY / 2 - ref)).toBeLessThanOrEqual(184 * DAY);
      const inMonth = one(`in ${capital(MONTHS[month]!)}`, ref, "past");
      expect(new Date(inMonth.from).getUTCMonth()).toBe(month);
      expect(inMonth.from).toBeLessThanOrEqual(ref);
      expect(ref - inMonth.from).toBeLessThan(366 * DAY);
    }
  });

  it("the same expression anywhere in a sentence reads the same; the time of day does not matter", () => {
    const r = random(6);
    const expressions = [
      "yesterday",
      "last Friday",
      "two weeks ago",
      "last month",
      "in March",
      "on 3 June",
      "12 October 2021",
      "next weekend",
      "last summer",
      "in 2019",
      "a few days ago",
    ];
    for (let i = 0; i < RUNS; i++) {
      const ref = r.instant();
      const expression = r.pick(expressions);
      const alone = one(expression, ref);
      const words = (n: number) => Array.from({ length: n }, () => r.pick(FILLER)).join(" ");
      const sentence = `${words(r.int(0, 8))} ${expression} ${words(r.int(0, 8))}`.trim();
      expect(one(sentence, ref)).toMatchObject({ from: alone.from, to: alone.to, text: expression });
      expect(one(expression, startOfDay(ref) + r.int(0, DAY - 1))).toMatchObject({ from: alone.from, to: alone.to });
    }
  });

  it("sentences that name no time have none; any text gives valid ranges, quickly", () => {
    const r = random(7);
    for (let i = 0; i < RUNS; i++) {
      const sentence = Array.from({ length: r.int(1, 30) }, () => r.pick(FILLER)).join(" ");
      expect(findTimes(sentence, r.instant(), "nearest"), sentence).toEqual([]);
    }
    const alphabet = "0123456789 ,.-aeiouymnrstlastnextonofinagoweekdaymonthyear";
    const started = Date.now();
    for (let i = 0; i < RUNS; i++) {
      const text = Array.from({ length: r.int(0, 400) }, () => alphabet[r.int(0, alphabet.length - 1)]).join("");
      for (const t of findTimes(text, r.instant(), r.pick(["past", "nearest"] as const))) {
        expect(Number.isFinite(t.from) && Number.isFinite(t.to) && t.to > t.from).toBe(true);
        expect(text.slice(t.index, t.index + t.text.length)).toBe(t.text);
      }
    }
    for (const text of [
      "1".repeat(5000),
      "3 ".repeat(2000),
      "in May ".repeat(700),
      "last ".repeat(1000),
      "yesterday ".repeat(500),
    ])
      findTimes(text, Date.UTC(2023, 0, 1), "nearest");
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
