import { describe, expect, it } from "vitest";
import {
  asksWhen,
  queryTimeRange,
  spanMatch,
  timeMatch,
  withoutTimeWords,
  yearsBefore,
} from "../../src/core/search/query-time";
import { resolveStatedTimes, statedMatch, statedTimes } from "../../src/core/search/stated-times";

// The times a query names (src/core/search/query-time.ts), as ranges of UTC instants.

const NOW = Date.UTC(2026, 10, 23, 15, 30); // Monday 23 November 2026, 15:30 UTC
const DAY = 86_400_000;
const range = (query: string) => {
  const r = queryTimeRange(query, NOW);
  return (
    r && {
      from: new Date(r.from).toISOString().slice(0, 10),
      to: new Date(r.to).toISOString().slice(0, 10),
      text: r.text,
    }
  );
};

describe("queryTimeRange", () => {
  it("reads absolute dates: a day, a month, a year", () => {
    expect(range("What did Maria do on 3 June, 2023?")).toEqual({
      from: "2023-06-03",
      to: "2023-06-04",
      text: "3 June, 2023",
    });
    expect(range("What painting did Melanie show on October 13, 2023?")).toEqual({
      from: "2023-10-13",
      to: "2023-10-14",
      text: "October 13, 2023",
    });
    expect(range("the 1st of May 2024 meeting")).toMatchObject({ from: "2024-05-01", to: "2024-05-02" });
    expect(range("deploys on 2025-02-28")).toMatchObject({ from: "2025-02-28", to: "2025-03-01" });
    expect(range("What did Mel paint in July 2023?")).toEqual({
      from: "2023-07-01",
      to: "2023-08-01",
      text: "July 2023",
    });
    expect(range("Sept 2021 outage")).toMatchObject({ from: "2021-09-01", to: "2021-10-01" });
    expect(range("How many times has Melanie gone to the beach in 2023?")).toEqual({
      from: "2023-01-01",
      to: "2024-01-01",
      text: "in 2023",
    });
    // A day of a month without a year: its latest occurrence up to today.
    expect(range("what happened on March 3")).toMatchObject({ from: "2026-03-03", to: "2026-03-04" });
    expect(range("what happened on December 3")).toMatchObject({ from: "2025-12-03", to: "2025-12-04" });
  });

  it("reads relative times from now, in whole UTC days, weeks starting on Monday", () => {
    expect(range("what did I cook yesterday")).toMatchObject({
      from: "2026-11-22",
      to: "2026-11-23",
      text: "yesterday",
    });
    expect(range("notes from today")).toMatchObject({ from: "2026-11-23", to: "2026-11-24" });
    expect(range("what did we decide last week")).toMatchObject({ from: "2026-11-16", to: "2026-11-23" });
    expect(range("plans for this week")).toMatchObject({ from: "2026-11-23", to: "2026-11-30" });
    expect(range("the hike last weekend")).toMatchObject({ from: "2026-11-21", to: "2026-11-23" });
    expect(range("invoices from last month")).toMatchObject({ from: "2026-10-01", to: "2026-11-01" });
    expect(range("goals set last year")).toMatchObject({ from: "2025-01-01", to: "2026-01-01" });
    expect(range("what did she say last Friday")).toMatchObject({ from: "2026-11-20", to: "2026-11-21" });
    expect(range("the call on monday")).toMatchObject({ from: "2026-11-16", to: "2026-11-17" }); // today is Monday: the one before
    expect(range("we met 3 days ago")).toMatchObject({ from: "2026-11-19", to: "2026-11-21" });
    expect(range("two weeks ago")).toMatchObject({ from: "2026-11-05", to: "2026-11-12" });
  });

  it("reads two times joined into one range, and a week of a month", () => {
    expect(range("Where was John between August 11 and August 15 2023?")).toEqual({
      from: "2023-08-11",
      to: "2023-08-16",
      text: "between August 11 and August 15 2023",
    });
    expect(range("what happened from 3 June 2023 to 10 June 2023")).toMatchObject({
      from: "2023-06-03",
      to: "2023-06-11",
    });
    expect(range("notes between Monday and Wednesday")).toMatchObject({ from: "2026-11-16", to: "2026-11-19" }); // today is Monday: the week before
    expect(range("Which country was Tim visiting in the second week of November 2023?")).toMatchObject({
      from: "2023-11-08",
      to: "2023-11-15",
    });
    expect(range("the last week of May 2023")).toMatchObject({ from: "2023-05-25", to: "2023-06-01" });
    expect(queryTimeRange("the second week of November", NOW)).toMatchObject({
      yearly: true,
      from: Date.UTC(2026, 10, 8),
    });
  });

  it("names no time where there is none, or no valid one", () => {
    for (const query of [
      "May I ask about the deploy?",
      "What is the boiling point of mercury?",
      "the 2023 tax return",
      "",
      "march on",
    ]) {
      expect(range(query), query).toBeNull();
    }
    // A day the month does not have: the month is still named.
    expect(range("31 February 2023")).toMatchObject({ from: "2023-02-01", to: "2023-03-01" });
  });

  it("answers quickly on hostile input", () => {
    const started = Date.now();
    for (const query of [
      "1".repeat(2000),
      "3 ".repeat(1000),
      "May ".repeat(500),
      "last ".repeat(400),
      "on 1 of ".repeat(250),
      "\u0000".repeat(2000),
    ])
      queryTimeRange(query, NOW);
    expect(Date.now() - started).toBeLessThan(500);
  });
});

describe("time matching", () => {
  it("is 1 inside the range and decays outside towards a half, more slowly for a wider range", () => {
    const day = queryTimeRange("on 3 June 2023", NOW)!;
    const year = queryTimeRange("in 2023", NOW)!;
    expect(timeMatch(Date.UTC(2023, 5, 3, 12), day)).toBe(1);
    expect(timeMatch(Date.UTC(2023, 5, 4, 0) + DAY, day)).toBeCloseTo(0.75, 6); // one day past: one half-life
    expect(timeMatch(Date.UTC(2020, 0, 1), day)).toBeCloseTo(0.5, 6);
    expect(timeMatch(Date.UTC(2024, 0, 1) + 30 * DAY, year)).toBeGreaterThan(
      timeMatch(Date.UTC(2023, 5, 4) + 30 * DAY, day),
    );
  });

  it("takes the time words out of the query unless nothing else would be left", () => {
    expect(
      withoutTimeWords("What did Ana cook in March 2024?", queryTimeRange("What did Ana cook in March 2024?", NOW)),
    ).toBe("What did Ana cook in  ?");
    expect(withoutTimeWords("What happened in 2023?", queryTimeRange("What happened in 2023?", NOW))).toBe(
      "What happened in 2023?",
    );
    expect(withoutTimeWords("unchanged", null)).toBe("unchanged");
  });
});

describe("when", () => {
  it("tells questions asking for a time", () => {
    for (const q of [
      "When did Caroline go to the support group?",
      "when is the dentist",
      "What year did they move?",
      "How long ago was the trip?",
      "And when was that?",
    ])
      expect(asksWhen(q), q).toBe(true);
    for (const q of ["What did Caroline do when she moved?", "Where is the dentist?", "whenever you like"])
      expect(asksWhen(q), q).toBe(false);
  });
});

describe("stated times", () => {
  const SAID = Date.UTC(2023, 4, 8, 13, 56); // Monday 8 May 2023, 13:56 UTC
  const days = (text: string) =>
    resolveStatedTimes(text, SAID).map(
      ([from, to]) => `${new Date(from).toISOString().slice(0, 10)}..${new Date(to).toISOString().slice(0, 10)}`,
    );

  it("resolves what a message says against when it was said", () => {
    expect(days("I went to a LGBTQ support group yesterday and it was so powerful.")).toEqual([
      "2023-05-07..2023-05-08",
    ]);
    expect(days("I joined a new activist group last Tues.")).toEqual(["2023-05-02..2023-05-03"]);
    expect(days("We went camping two weekends ago, and again last weekend")).toEqual([
      "2023-04-29..2023-05-01",
      "2023-05-06..2023-05-08",
    ]);
    expect(days("Next month I'm having an art show")).toEqual(["2023-06-01..2023-07-01"]);
    expect(days("see you in two weeks")).toEqual(["2023-05-18..2023-05-25"]);
    expect(days("last summer we drove west; back in 2019 we flew")).toEqual([
      "2022-06-01..2022-09-01",
      "2019-01-01..2020-01-01",
    ]);
    // A month or a day without its year: the nearest (stored text speaks of plans as well as the past).
    expect(days("The recital is on 20 May")).toEqual(["2023-05-20..2023-05-21"]);
    expect(days("We married in December")).toEqual(["2022-12-01..2023-01-01"]);
    expect(days("I've been painting recently")).toEqual(["2023-04-08..2023-05-09"]);
    // Monday 8 May: the weekend just gone, the week before the last one, some day of the past week, a month back.
    expect(days("We hiked over the weekend")).toEqual(["2023-05-06..2023-05-08"]);
    expect(days("the week before last")).toEqual(["2023-04-24..2023-05-01"]);
    expect(days("I saw her the other day")).toEqual(["2023-05-01..2023-05-08"]);
    expect(days("a month back")).toEqual(days("a month ago"));
    // A day of the month alone, after a word that makes it a date: this month's, or the nearest.
    expect(days("I met my teammates on the 15th after my trip")).toEqual(["2023-05-15..2023-05-16"]);
    expect(days("It was due on the 30th.")).toEqual(["2023-04-30..2023-05-01"]);
    for (const text of ["we live on the 3rd floor", "on the 2nd time", "the 21st century"])
      expect(days(text), text).toEqual([]);
  });

  it("finds none in text that states no time, or only the verb May", () => {
    for (const text of [
      "I love painting",
      "May I come along?",
      "This may take a while",
      "The appointment needs the card",
      "I sat in the sun",
      "march on",
      "",
    ]) {
      expect(days(text), text).toEqual([]);
    }
  });

  it("reads kept times, and resolves a row that has none kept (NULL) as the write would have", () => {
    const content = "I went yesterday";
    expect(statedTimes({ stated_times: null, chunk_content: content, created_at: SAID })).toEqual(
      resolveStatedTimes(content, SAID),
    );
    expect(statedTimes({ stated_times: "[[1,2]]", chunk_content: content, created_at: SAID })).toEqual([[1, 2]]);
    expect(statedTimes({ stated_times: "[]", chunk_content: content, created_at: SAID })).toEqual([]);
  });

  it("matches a stated span against a range as an instant is matched: 1 where they meet, decaying outside", () => {
    const day = queryTimeRange("on 7 May 2023", NOW)!;
    expect(statedMatch([[Date.UTC(2023, 4, 7), Date.UTC(2023, 4, 8)]], day)).toBe(1);
    expect(statedMatch([[Date.UTC(2023, 4, 6), Date.UTC(2023, 4, 8)]], day)).toBeCloseTo(0.75, 6);
    expect(statedMatch([], day)).toBe(0);
    // A stated time wider than the range meets it but places less on it: "last weekend" (two days) for one of them,
    // "recently" (31 days) or "in 2023" for a day.
    expect(
      statedMatch(resolveStatedTimes("last weekend", Date.UTC(2023, 4, 8)), queryTimeRange("on 6 May 2023", NOW)!),
    ).toBeCloseTo(0.75, 6);
    expect(statedMatch(resolveStatedTimes("recently", Date.UTC(2023, 4, 20)), day)).toBeCloseTo(0.5 + 0.5 / 31, 6);
    expect(statedMatch(resolveStatedTimes("in 2023", SAID), day)).toBeCloseTo(0.5 + 0.5 / 365, 6);
    // The time the question names is the wider one: the whole stated day is in it.
    expect(statedMatch(resolveStatedTimes("yesterday", SAID), queryTimeRange("in May 2023", NOW)!)).toBe(1);
    // Ending a day before the range starts is as far as an instant a day before it.
    expect(spanMatch(Date.UTC(2023, 4, 1), Date.UTC(2023, 4, 6), day)).toBeCloseTo(
      timeMatch(Date.UTC(2023, 4, 6) - 1, day),
      9,
    );
    expect(spanMatch(Date.UTC(2023, 4, 9), Date.UTC(2023, 4, 10), day)).toBeCloseTo(
      timeMatch(Date.UTC(2023, 4, 9), day),
      9,
    );
  });

  it("a time named without its year is marked so, and moves back a year at a time", () => {
    const june = queryTimeRange("When did Melanie go camping in June?", NOW)!;
    expect(june).toMatchObject({ text: "in June", yearly: true, from: Date.UTC(2026, 5, 1), to: Date.UTC(2026, 6, 1) });
    expect(yearsBefore(june, 3)).toMatchObject({ from: Date.UTC(2023, 5, 1), to: Date.UTC(2023, 6, 1) });
    expect(queryTimeRange("in June 2023", NOW)!.yearly).toBeUndefined();
  });
});
