import { describe, expect, it } from "vitest";
import { reindexLegacyBatches } from "../src/core/keyword-index/indexing";
import { fillStatedTimes, resolveStatedTimes } from "../src/core/search/stated-times";
import { call, newTenant, tenantDb } from "./helpers";

/** Stated times (chunks.stated_times, src/core/search/stated-times.ts): kept at write time, filled by the sweep for older rows. */

const SAID = Date.UTC(2023, 4, 8, 13, 56); // Monday 8 May 2023

describe("stated times", () => {
  it("are resolved against the message's timestamp when written, and filled by the re-index sweep for rows without them", async () => {
    const t = await newTenant();
    const turns = ["I went to a support group yesterday.", "Next month I'm having an art show!", "Nice, congrats."];
    for (const [i, content] of turns.entries()) {
      await call(t.apiKey, "log_chat", {
        conversation_id: "c1",
        role: i % 2 === 0 ? "user" : "assistant",
        content,
        timestamp: new Date(SAID + i * 60_000).toISOString(),
      });
    }
    const db = await tenantDb(t.tenantId);
    const kept = async () =>
      (
        await db
          .prepare(
            "SELECT c.content, c.stated_times FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.tenant_id = ? ORDER BY i.position",
          )
          .bind(t.tenantId)
          .all<{ content: string; stated_times: string | null }>()
      ).results;
    const expected = turns.map((content, i) => JSON.stringify(resolveStatedTimes(content, SAID + i * 60_000)));
    expect((await kept()).map((r) => r.stated_times)).toEqual(expected);
    expect(JSON.parse(expected[0]!)).toEqual([[Date.UTC(2023, 4, 7), Date.UTC(2023, 4, 8)]]);
    expect(expected[2]).toBe("[]");

    // Rows written before migration 0020 have none; the sweep's batches fill them with what the write would have kept.
    await db.prepare("UPDATE chunks SET stated_times = NULL WHERE tenant_id = ?").bind(t.tenantId).run();
    expect(await fillStatedTimes(db, 2)).toBe(2);
    expect((await kept()).filter((r) => r.stated_times === null)).toHaveLength(1);
    expect(await reindexLegacyBatches(db, 10)).toBe(false);
    expect((await kept()).map((r) => r.stated_times)).toEqual(expected);
    expect(await fillStatedTimes(db)).toBe(0);
  });
});
