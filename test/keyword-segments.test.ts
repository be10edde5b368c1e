import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { UnitMeter } from "../src/billable-units";
import {
  keywordSegments,
  MERGE_SHARE,
  mergeDue,
  mergeDueByWrites,
  mergeKeywordSegments,
} from "../src/core/keyword-index/segments";
import { meteredD1 } from "../src/db/metered-d1";
import { readKeywordMarks } from "../src/db/pass-marks";
import worker from "../src/index";
import { RECENT_JOBS_CRON } from "../src/jobs/recent-jobs";
import { call, newKey, newTenant, type TestTenant } from "./helpers";

/**
 * The keyword index's segments (src/core/keyword-index/segments.ts): every write adds one, the minute pass merges
 * them once they are a share of the index, and searches find the same hits with the same scores throughout.
 */

const QUERIES = ["harbour crane", "quillwort wall", "ferry timetable", "plot 7", "entry"];

/** Each query's hits as a client sees them: items, chunks and scores (a key of its own: the per-key rate limit is 40 a minute here). */
async function answers(t: TestTenant) {
  const { apiKey } = await newKey(t.tenantId);
  const out: unknown[] = [];
  for (const query of QUERIES) {
    const { results } = await call<{ results: { item_id: string; chunk_index: number; score: number }[] }>(
      apiKey,
      "search",
      { query, limit: 20, mode: "keyword" },
    );
    out.push(results.map((r) => [r.item_id, r.chunk_index, r.score]));
  }
  return out;
}

/** Twenty made-up words for memory `n`, most of them its own. */
const words = (n: number) => Array.from({ length: 20 }, (_, i) => `w${(n * 7 + i * 13) % 5000}x${i % 4}`).join(" ");

async function minutePass() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: RECENT_JOBS_CRON, scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

let t: TestTenant;
beforeAll(async () => {
  t = await newTenant();
  // Twelve writes (a segment each, before FTS5's automerge folds some), of unequal sizes, with words enough that
  // the index spans some pages.
  for (let w = 0; w < 12; w++) {
    const memories = Array.from({ length: w % 3 === 0 ? 100 : 20 }, (_, k) => ({
      content: `${["The harbour crane", "A quillwort by the wall", "The ferry timetable"][(w + k) % 3]} log, write ${w}, entry ${k}, plot ${k % 10}: ${words(w * 100 + k)}.`,
    }));
    await call(t.apiKey, "memory_batch_store", { memories });
  }
}, 60_000);

describe("keyword index segments", () => {
  it("are due for a merge only when more than one, with the share outside the largest past MERGE_SHARE", () => {
    expect(mergeDue([])).toBe(false);
    expect(mergeDue([{ pages: 500 }])).toBe(false);
    // A tenth of the pages outside the largest: 100 of 1,000 is due, 99 of 999 is not.
    expect(MERGE_SHARE).toBe(0.1);
    expect(mergeDue([{ pages: 900 }, { pages: 100 }])).toBe(true);
    expect(mergeDue([{ pages: 900 }, { pages: 99 }])).toBe(false);
    expect(mergeDue([{ pages: 900 }, { pages: 50 }, { pages: 50 }])).toBe(true);
    expect(mergeDue([{ pages: 1 }, { pages: 1 }])).toBe(true);
  });

  it("are merged by the minute pass, a few pages at a time when it must, and searches find the same throughout", async () => {
    const before = await keywordSegments(t.db);
    expect(before.length).toBeGreaterThan(1);
    expect(mergeDue(before)).toBe(true);
    const expected = await answers(t);
    expect(expected.every((hits) => (hits as unknown[]).length > 0)).toBe(true);
    // Four pages a pass: the merge stays unfinished for a few passes, and every search between them reads the same.
    let passes = 0;
    while ((await keywordSegments(t.db)).length > 1) {
      expect(await mergeKeywordSegments(t.db, 4)).toBeGreaterThan(1);
      expect(await answers(t)).toEqual(expected);
      expect(++passes).toBeLessThan(50);
    }
    expect(passes).toBeGreaterThan(1);
    expect(await keywordSegments(t.db)).toHaveLength(1);
    // One segment: nothing is due; the merge is recorded as done, with the write count it covers.
    expect(await mergeKeywordSegments(t.db)).toBe(0);
    const marks = (await readKeywordMarks(t.db))!;
    expect(marks.mergeWritten).toBe(marks.written);
    expect(marks.mergeTokens).toBeGreaterThan(0);
  });

  it("are not counted while less than the share was written since the last merge: a look reads one row", async () => {
    const meter = new UnitMeter();
    const metered = meteredD1(t.db, meter);
    expect(await mergeKeywordSegments(metered)).toBe(0);
    expect(meter.current).toMatchObject({ d1RowsRead: 1, d1RowsWritten: 0 });
    // Counting the pages, as every pass did before, reads a row a leaf page.
    const counted = new UnitMeter();
    expect((await keywordSegments(meteredD1(t.db, counted))).reduce((sum, s) => sum + s.pages, 0)).toBeGreaterThan(1);
    expect(counted.current.d1RowsRead).toBeGreaterThan(1);
    // The rule, on the counter's marks: a tenth of the index as it will be.
    const marks = (written: number) => ({
      written,
      writtenAt: 0,
      mergeWritten: 1_000,
      mergeTokens: 9_000,
      topsWritten: null,
      vectorsCycleWritten: null,
      vectorsWritten: null,
      conversationsWritten: null,
      dispatchWritten: null,
      dispatchCursor: null,
    });
    expect(mergeDueByWrites(marks(1_000))).toBe(false);
    expect(mergeDueByWrites(marks(1_999))).toBe(false);
    expect(mergeDueByWrites(marks(2_000))).toBe(true);
    // A shard that keeps no count (no identity row) is always looked at.
    expect(mergeDueByWrites(null)).toBe(true);
  });

  it("are merged again by the minute pass once later writes are a share of the index", async () => {
    const merged = await keywordSegments(t.db);
    expect(merged).toHaveLength(1);
    // A small write beside the merged index: its segment is under the share, so the pass leaves it.
    await call(t.apiKey, "memory_store", { content: "The harbour crane log, a late entry." });
    const small = await keywordSegments(t.db);
    expect(small.length).toBe(2);
    expect(mergeDue(small)).toBe(false);
    await minutePass();
    expect(await keywordSegments(t.db)).toEqual(small);
    // Writes past the share: the pass merges them (in one pass at its default budget, at this size).
    for (let w = 0; w < 4; w++) {
      await call(t.apiKey, "memory_batch_store", {
        memories: Array.from({ length: 40 }, (_, k) => ({
          content: `The ferry timetable, late write ${w}, entry ${k}: ${words(9000 + w * 100 + k)}.`,
        })),
      });
    }
    expect(mergeDue(await keywordSegments(t.db))).toBe(true);
    const expected = await answers(t);
    await minutePass();
    expect(await keywordSegments(t.db)).toHaveLength(1);
    expect(await answers(t)).toEqual(expected);
  });
});
