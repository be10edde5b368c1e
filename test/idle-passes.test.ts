import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { PASS_HOUR_LOG, PASSES_JOB, SHARD_WORK } from "../src/jobs/pass-usage";
import { RECENT_JOBS_CRON } from "../src/jobs/recent-jobs";
import { call, newKey, newTenant, type TestTenant, waitForEmbeddings } from "./helpers";

/**
 * A shard at rest (issue 61): every scheduled pass with nothing to do reads a few rows whatever the shard holds, writes
 * none, and what the passes cost is recorded once an hour (src/jobs/pass-usage.ts).
 */

const HOUR = 3_600_000;
const SWEEP_CRON = "*/15 * * * *";

async function fire(cron: string, at: number) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron, scheduledTime: at }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** An hour of crons from `hour` on: 60 minute passes and 4 sweeps, each sweep after its minute's pass. */
async function cronHour(hour: number) {
  for (let minute = 0; minute < 60; minute++) {
    await fire(RECENT_JOBS_CRON, hour + minute * 60_000);
    if (minute % 15 === 0) await fire(SWEEP_CRON, hour + minute * 60_000 + 1_000);
  }
}

/** The shard's recorded pass units of one hour. */
async function passHour(t: TestTenant, hour: number) {
  return t.db
    .prepare(
      "SELECT calls, d1_rows_read AS read, d1_rows_written AS written FROM usage_hours WHERE tenant_id = ? AND source = 'job' AND name = ? AND hour = ?",
    )
    .bind(SHARD_WORK, PASSES_JOB, hour)
    .first<{ calls: number; read: number; written: number }>();
}

/** Rows written by every pass recorded on the shard so far. */
async function recordedWrites(t: TestTenant): Promise<number> {
  const row = await t.db
    .prepare("SELECT COALESCE(SUM(d1_rows_written), 0) AS n FROM usage_hours WHERE tenant_id = ? AND name = ?")
    .bind(SHARD_WORK, PASSES_JOB)
    .first<{ n: number }>();
  return row!.n;
}

/** Items of the tenant still waiting for their embed or link job. */
async function pendingItems(t: TestTenant): Promise<number> {
  const row = await t.db
    .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND (embedded_at IS NULL OR linked_at IS NULL)")
    .bind(t.tenantId)
    .first<{ n: number }>();
  return row!.n;
}

/**
 * Drives the crons from `from` on until a round of them writes nothing with no job pending (the passes and the jobs
 * they sent have caught up); the next time.
 */
async function untilAtRest(t: TestTenant, from: number): Promise<number> {
  let at = from;
  for (let round = 0; round < 200; round++) {
    const before = await recordedWrites(t);
    await fire(RECENT_JOBS_CRON, at);
    await fire(SWEEP_CRON, at + 1_000);
    at += 15 * 60_000;
    if ((await recordedWrites(t)) === before && (await pendingItems(t)) === 0) return at;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("the passes did not come to rest in 200 rounds");
}

/** Fills the tenant with `n` memories and `turns` logged turns over three conversations. */
async function fill(t: TestTenant, n: number, turns: number, offset: number) {
  // A new key every 30 calls: the per-key rate limit is 40 calls a minute here.
  let calls = 0;
  let apiKey = "";
  const key = async () => {
    if (calls++ % 30 === 0) apiKey = (await newKey(t.tenantId)).apiKey;
    return apiKey;
  };
  for (let i = 0; i < n; i += 100) {
    const memories = Array.from({ length: Math.min(100, n - i) }, (_, k) => ({
      content: `The harbour log, entry ${offset + i + k}: the crane moved ${(i + k) % 13} boxes of quillwort.`,
    }));
    await call(await key(), "memory_batch_store", { memories });
  }
  for (let i = 0; i < turns; i++)
    await call(await key(), "log_chat", {
      conversation_id: `talk-${offset}-${i % 3}`,
      role: i % 2 === 0 ? "user" : "assistant",
      content: `Turn ${i} about the ferry timetable and plot ${i % 7}.`,
    });
  await waitForEmbeddings(t.tenantId, 60_000);
}

let t: TestTenant;
beforeAll(async () => {
  t = await newTenant();
  await fill(t, 1_200, 30, 0);
}, 180_000);

describe("scheduled passes at rest", () => {
  it("read the same few rows an hour whatever the shard holds, and write none but the hour's record", async () => {
    const logs = vi.spyOn(console, "log");
    /** An hour of crons at rest: what the hour's log line says of it, and the shard's record of it. */
    const idleHour = async (from: number) => {
      const rest = await untilAtRest(t, from);
      const hour = Math.ceil(rest / HOUR) * HOUR;
      await cronHour(hour);
      // Not recorded yet: the hour's passes wrote nothing, so their units wait for the next hour's first pass.
      expect(await passHour(t, hour)).toBeNull();
      await fire(RECENT_JOBS_CRON, hour + HOUR);
      const logged = logs.mock.calls
        .map((args) => String(args[0]))
        .filter((line) => line.startsWith(PASS_HOUR_LOG))
        .map((line) => JSON.parse(line.slice(PASS_HOUR_LOG.length)))
        .find((line) => line.hour === new Date(hour).toISOString() && line.shard === t.shard);
      return { logged, recorded: await passHour(t, hour), next: hour + 2 * HOUR };
    };
    const small = await idleHour(Date.now() + 30 * 86_400_000);
    await fill(t, 1_500, 30, 5_000);
    const large = await idleHour(small.next + 30 * 86_400_000);

    for (const { logged, recorded } of [small, large]) {
      expect(logged.invocations).toBe(64);
      expect(logged.written).toBe(0);
      // Issue 61's target at rest, an hour's share of a day: 10,000 rows read and 100 written.
      expect(logged.read).toBeLessThanOrEqual(10_000 / 24);
      // The record: one row for the hour, with what the last record cost (a row and at most its key's entry).
      expect(recorded).toMatchObject({ calls: 64 });
      expect(recorded!.written).toBeLessThanOrEqual(2);
    }
    // Twice the items, the same reads, pass by pass.
    expect(large.logged.passes).toEqual(small.logged.passes);
    expect(large.logged.read).toBe(small.logged.read);
  }, 600_000);
});
