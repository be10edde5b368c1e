import { describe, expect, it } from "vitest";
import { asksWhen, queryTimeRange, statesTime, timeMatch, withoutTimeWords } from "../../src/core/memory/query-time";

// The times a query names (src/core/memory/query-time.ts), as ranges of UTC instants.

const NOW = Date.UTC(2026, 10, 23, 15, 30); // Monday 23 November 2026, 15:30 UTC
const DAY = 86_400_000;
const range = (query: string) => {
  const r = queryTimeRange(query, NOW);
  return r && { from: new Date(r.from).toISOString().slice(0, 10), to: new Date(r.to).toISOString().slice(0, 10), text: r.text };
};

describe("queryTimeRange", () => {
  it("reads absolute dates: a day, a month, a year", () => {
    expect(range("What did Maria do on 3 June, 2023?")).toEqual({ from: "2023-06-03", to: "2023-06-04", text: "3 June, 2023" });
    expect(range("What painting did Melanie show on October 13, 2023?")).toEqual({ from: "2023-10-13", to: "2023-10-14", text: "October 13, 2023" });
    expect(range("the 1st of May 2024 meeting")).toMatchObject({ from: "2024-05-01", to: "2024-05-02" });
    expect(range("deploys on 2025-02-28")).toMatchObject({ from: "2025-02-28", to: "2025-03-01" });
    expect(range("What did Mel paint in July 2023?")).toEqual({ from: "2023-07-01", to: "2023-08-01", text: "July 2023" });
    expect(range("Sept 2021 outage")).toMatchObject({ from: "2021-09-01", to: "2021-10-01" });
    expect(range("How many times has Melanie gone to the beach in 2023?")).toEqual({ from: "2023-01-01", to: "2024-01-01", text: "in 2023" });
    // A day of a month without a year: its latest occurrence up to today.
    expect(range("what happened on March 3")).toMatchObject({ from: "2026-03-03", to: "2026-03-04" });
    expect(range("what happened on December 3")).toMatchObject({ from: "2025-12-03", to: "2025-12-04" });
  });

  it("reads relative times from now, in whole UTC days, weeks starting on Monday", () => {
    expect(range("what did I cook yesterday")).toMatchObject({ from: "2026-11-22", to: "2026-11-23", text: "yesterday" });
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

  it("names no time where there is none, or no valid one", () => {
    for (const query of ["May I ask about the deploy?", "What is the boiling point of mercury?", "the 2023 tax return", "", "march on"]) {
      expect(range(query), query).toBeNull();
    }
    // A day the month does not have: the month is still named.
    expect(range("31 February 2023")).toMatchObject({ from: "2023-02-01", to: "2023-03-01" });
  });

  it("answers quickly on hostile input", () => {
    const started = Date.now();
    for (const query of ["1".repeat(2000), "3 ".repeat(1000), "May ".repeat(500), "last ".repeat(400), "on 1 of ".repeat(250), "\u0000".repeat(2000)]) queryTimeRange(query, NOW);
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
    expect(timeMatch(Date.UTC(2024, 0, 1) + 30 * DAY, year)).toBeGreaterThan(timeMatch(Date.UTC(2023, 5, 4) + 30 * DAY, day));
  });

  it("takes the time words out of the query unless nothing else would be left", () => {
    expect(withoutTimeWords("What did Ana cook in March 2024?", queryTimeRange("What did Ana cook in March 2024?", NOW))).toBe("What did Ana cook in  ?");
    expect(withoutTimeWords("What happened in 2023?", queryTimeRange("What happened in 2023?", NOW))).toBe("What happened in 2023?");
    expect(withoutTimeWords("unchanged", null)).toBe("unchanged");
  });
});

describe("when", () => {
  it("tells questions asking for a time, and text that states one", () => {
    for (const q of ["When did Caroline go to the support group?", "when is the dentist", "What year did they move?", "How long ago was the trip?", "And when was that?"]) expect(asksWhen(q), q).toBe(true);
    for (const q of ["What did Caroline do when she moved?", "Where is the dentist?", "whenever you like"]) expect(asksWhen(q), q).toBe(false);
    for (const t of ["I went yesterday", "It was last Sunday!", "back in 2019", "on Friday at 3pm", "since March", "a few weeks ago"]) expect(statesTime(t), t).toBe(true);
    for (const t of ["I love painting", "May I come along?", "The appointment needs the card"]) expect(statesTime(t), t).toBe(false);
  });
});
