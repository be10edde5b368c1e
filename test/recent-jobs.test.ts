import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { shardDatabase, shardNames } from "../src/control/shards";
import worker from "../src/index";
import { RECENT_JOB_GRACE_MS, RECENT_JOBS_CRON } from "../src/jobs/recent-jobs";
import { LOST_JOB_AFTER_MS } from "../src/jobs/sweep";
import type { JobMessage } from "../src/messages";
import { callWith } from "./fault-helpers";
import { newTenant, waitForEmbeddings } from "./helpers";

// The every-minute pass (src/jobs/recent-jobs.ts): a job lost between the write and the queue is re-sent
// minutes after the write, not at the 15-minute sweep of items pending for 10.

/** The minute cron at `at`, with the job queue kept (or failing); what it sent. */
async function minutePass(at: number, queue: "kept" | "down" | "real" = "kept"): Promise<JobMessage[]> {
  const sent: JobMessage[] = [];
  const kept = {
    sendBatch: async (messages: { body: JobMessage }[]) => void sent.push(...messages.map((m) => m.body)),
  };
  const down = {
    sendBatch: async () => Promise.reject(new Error("Queue sendBatch failed: Queue is overloaded. Please back off.")),
  };
  const ctx = createExecutionContext();
  const jobs = queue === "kept" ? kept : queue === "down" ? down : env.JOBS;
  await worker.scheduled(
    createScheduledController({ cron: RECENT_JOBS_CRON, scheduledTime: at }),
    { ...env, JOBS: jobs as unknown as Queue },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return sent;
}

describe("the recent-jobs pass", () => {
  // Each test runs its passes at made-up future times; the pass's cursor (reconcile_state row 2) starts afresh.
  beforeEach(async () => {
    for (const shard of shardNames(env))
      await shardDatabase(env, shard).prepare("DELETE FROM reconcile_state WHERE id = 2").run();
  });

  it("re-sends a write's lost embed job once it is two minutes old, once, and not while the queue is down", async () => {
    const t = await newTenant();
    const written = Date.now();
    const stored = await callWith("queue:down", t, "memory_store", {
      content: "The bike pump is in the shed by the door.",
    });
    const id = (stored.result as { id: string }).id;
    const mine = (sent: JobMessage[]) => sent.filter((m) => m.tenantId === t.tenantId);

    // A minute later its job may still be on its way: nothing is sent for it.
    expect(mine(await minutePass(written + 60_000))).toEqual([]);
    // Two minutes on, the queue is down: the pass fails and keeps its place.
    expect(mine(await minutePass(written + RECENT_JOB_GRACE_MS + 30_000, "down"))).toEqual([]);
    // The queue is back: the next pass sends the item's embed job...
    expect(mine(await minutePass(written + RECENT_JOB_GRACE_MS + 90_000))).toEqual([
      { type: "embed", tenantId: t.tenantId, itemIds: [id] },
    ]);
    // ...and only once: the one after has moved past it.
    expect(mine(await minutePass(written + RECENT_JOB_GRACE_MS + 150_000))).toEqual([]);
  });

  it("writes its cursor only once it has passed something or the last write: an idle shard's pass writes nothing", async () => {
    const cursors = () =>
      Promise.all(
        shardNames(env).map((shard) =>
          shardDatabase(env, shard).prepare("SELECT cursor FROM reconcile_state WHERE id = 2").first<number>("cursor"),
        ),
      );
    // Far in the future, past every write: no pass reads an item or writes its cursor, however long the shard rests.
    const start = Date.now() + 30 * 86_400_000;
    for (let minute = 0; minute <= 2 * (LOST_JOB_AFTER_MS / 60_000); minute++) {
      await minutePass(start + minute * 60_000);
      expect(await cursors()).toEqual(shardNames(env).map(() => null));
    }
    // A write (with the cursor afresh): no pass writes the cursor before it is past the write; the one that is writes
    // it, with the job the write lost sent, and the next writes nothing again.
    for (const shard of shardNames(env))
      await shardDatabase(env, shard).prepare("DELETE FROM reconcile_state WHERE id = 2").run();
    const t = await newTenant();
    const written = Date.now();
    await callWith("queue:down", t, "memory_store", { content: "The ladder hangs in the garage." });
    const shard = shardNames(env).indexOf(t.shard);
    const mine = (sent: JobMessage[]) => sent.filter((m) => m.tenantId === t.tenantId);
    expect(mine(await minutePass(written + 60_000))).toEqual([]);
    expect((await cursors())[shard]).toBeNull();
    const past = written + RECENT_JOB_GRACE_MS + 60_000;
    expect(mine(await minutePass(past))).toHaveLength(1);
    expect((await cursors())[shard]).toBe(past - RECENT_JOB_GRACE_MS);
    await minutePass(past + 60_000);
    expect((await cursors())[shard]).toBe(past - RECENT_JOB_GRACE_MS);
  });

  it("re-sends through the real queue, whose consumer embeds the item", async () => {
    const t = await newTenant();
    const written = Date.now();
    const stored = await callWith("queue:down", t, "memory_store", {
      content: "Spare fuses are kept in the hall drawer.",
    });
    expect(stored.result).toBeDefined();
    const embedded = () =>
      t.db
        .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NOT NULL")
        .bind(t.tenantId)
        .first<number>("n");
    expect(await embedded()).toBe(0);
    await minutePass(written + RECENT_JOB_GRACE_MS + 200_000, "real");
    await waitForEmbeddings(t.tenantId);
    expect(await embedded()).toBe(1);
  });
});
