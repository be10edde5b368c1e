import { describe, expect, it } from "vitest";
import { SEARCH_STAGES } from "../src/config";
import { queryContext } from "../src/core/search/query-context";
import { queryTimeRange } from "../src/core/search/query-time";

// A derived memory in search's query context (src/core/search/query-context.ts): its time is when its turns were
// said (valid_from), not when extraction wrote it, and the relative times in its text count from then.

const SAID = Date.parse("2023-05-08T13:56:00Z");
const EXTRACTED = Date.parse("2026-11-27T10:00:00Z");
const stages = new Set(SEARCH_STAGES);
const memory = (content: string, validFrom: number) => ({
  created_at: EXTRACTED,
  speaker: null,
  chunk_content: content,
  // Resolved at write time, against when extraction wrote it.
  stated_times: JSON.stringify([[EXTRACTED - 7 * 86_400_000, EXTRACTED]]),
  derived: JSON.stringify(["event", "Caroline", validFrom, null, ["t1"]]),
});
const turn = (content: string, at: number) => ({ created_at: at, speaker: "Caroline", chunk_content: content });

describe("a derived memory's time in the query's context", () => {
  it("is when its source turns were said, as theirs is", () => {
    const query = "What did Caroline do in May 2023?";
    const range = queryTimeRange(query, EXTRACTED);
    const derived = memory("Caroline went to a support group.", SAID);
    const context = queryContext(query, range, [derived, turn("I went to a support group.", SAID)], stages);
    expect(context.range).not.toBeNull();
    expect(context.multiplier(derived)).toBe(1);
    // The same text, as a stored item written when extraction ran: outside the time asked about.
    const stored = { ...derived, derived: null };
    expect(context.multiplier(stored)).toBeLessThan(1);
  });

  it("resolves the relative times its text states against when it was said", () => {
    const query = "What did Caroline do on 7 May 2023?";
    const range = queryTimeRange(query, EXTRACTED);
    // "yesterday", said on 8 May 2023, is 7 May: only that reading puts it in the time asked about (its valid_from is
    // 8 May, and its stored times count from extraction's day).
    const saidThen = memory("Caroline went to a support group yesterday.", SAID);
    const saidEarlier = memory("Caroline went to a support group yesterday.", SAID - 30 * 86_400_000);
    const context = queryContext(query, range, [saidThen, saidEarlier], stages);
    expect(context.range).not.toBeNull();
    expect(context.multiplier(saidThen)).toBe(1);
    expect(context.multiplier(saidEarlier)).toBeLessThan(1);
  });
});
