import type { DerivedView } from "../memory/derived";
import { OUTSIDE_RANGE_FLOOR, spanMatch, type TimeRange } from "./query-time";
import { findTimes } from "./time-expressions";

/**
 * The times a chunk's text states, resolved when it is written against the time its item was said
 * (created_at: log_chat's timestamp, else the write): "I went yesterday", said on 8 May 2023, states
 * 7 May 2023. Kept on the chunk (chunks.stated_times) as JSON [[from, to], ...] in epoch ms, so search
 * ranks by time as data: a question naming 7 May finds that message, and a question asking when
 * prefers text that states a time, whatever words it used for it.
 */

export type StatedTime = [from: number, to: number];

/** At most this many times are kept for one chunk (a long chunk listing dates keeps the first). */
const MAX_STATED = 16;

/** A chunk's stated times as stored: JSON, "[]" when it states none. */
export function statedTimesJson(content: string, said: number): string {
  return JSON.stringify(resolveStatedTimes(content, said));
}

export function resolveStatedTimes(content: string, said: number): StatedTime[] {
  return findTimes(content, said, "nearest")
    .slice(0, MAX_STATED)
    .map((t): StatedTime => [t.from, t.to]);
}

/**
 * When a row's text was said: a derived memory's `valid_from` (its event's day, else when its earliest source turn was
 * said), not when extraction wrote it; any other item's created_at.
 */
export function saidAt(row: { created_at: number }, derived: DerivedView | null): number {
  return derived?.validFrom ?? row.created_at;
}

/**
 * A row's stated times; a derived memory's resolved against when it was said (saidAt): the times stored with its
 * chunk count from when extraction wrote it.
 */
export function rowStatedTimes(
  row: { stated_times?: string | null; chunk_content: string; created_at: number },
  derived: DerivedView | null,
): StatedTime[] {
  return derived ? resolveStatedTimes(row.chunk_content, saidAt(row, derived)) : statedTimes(row);
}

/** A chunk's stated times: as stored, or resolved now for a row written before they were kept (NULL). */
export function statedTimes(row: {
  stated_times?: string | null;
  chunk_content: string;
  created_at: number;
}): StatedTime[] {
  if (typeof row.stated_times === "string") {
    try {
      const parsed = JSON.parse(row.stated_times) as unknown;
      if (Array.isArray(parsed))
        return parsed.filter(
          (t): t is StatedTime => Array.isArray(t) && typeof t[0] === "number" && typeof t[1] === "number",
        );
    } catch {
      // Not ours: resolve it again below.
    }
  }
  return resolveStatedTimes(row.chunk_content, row.created_at);
}

/** Chunks given their stated times per batch of the re-index sweep. */
export const STATED_BATCH = 1_000;

/**
 * Gives up to `limit` chunks written before migration 0020 their stated times, resolved against their item's time,
 * through the partial index of chunks without them (the re-index sweep, keyword-index/indexing.ts). A chunk rewritten
 * meanwhile already has them and is left as it is. Returns how many chunks it read; fewer than `limit` means none
 * are left.
 */
export async function fillStatedTimes(d1: D1Database, limit = STATED_BATCH): Promise<number> {
  const { results } = await d1
    .prepare(
      `SELECT c.id, c.content, i.created_at FROM chunks c CROSS JOIN items i
       WHERE c.stated_times IS NULL AND i.id = c.item_id ORDER BY c.tenant_id, c.id LIMIT ?`,
    )
    .bind(limit)
    .all<{ id: number; content: string; created_at: number }>();
  if (results.length === 0) return 0;
  const rows = results.map((c) => [c.id, statedTimesJson(c.content, c.created_at)]);
  await d1
    .prepare(
      "UPDATE chunks SET stated_times = j.value ->> 1 FROM json_each(?) j WHERE chunks.id = j.value ->> 0 AND chunks.stated_times IS NULL",
    )
    .bind(JSON.stringify(rows))
    .run();
  return results.length;
}

/**
 * How well the best of the stated times matches the range (query-time.ts spanMatch); 0 when none is stated. A stated
 * time wider than the range says less about it: "recently" (a month) or "in 2023" meets 7 May 2023 but does not place
 * anything on that day: it counts OUTSIDE_RANGE_FLOOR plus the rest times the range's share of it ("last weekend" for a
 * Saturday 0.75, "recently" for a day 0.52).
 */
export function statedMatch(stated: StatedTime[], range: TimeRange): number {
  const width = range.to - range.from;
  return stated.reduce((best, [from, to]) => {
    const precision = to - from > width ? OUTSIDE_RANGE_FLOOR + (1 - OUTSIDE_RANGE_FLOOR) * (width / (to - from)) : 1;
    return Math.max(best, spanMatch(from, to, range) * precision);
  }, 0);
}
