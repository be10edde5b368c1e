// The cost bench's idle hour (issue 61: "at rest, an idle shard's passes read at most 10,000 rows and write at most 100
// rows a day"): the crons of one hour fired at a shard where nothing is written, and what the worker recorded of them.
// The crons are fired with their scheduled time (miniflare's /cdn-cgi/local/scheduled), in hours after the bench's
// own, so the hour is a whole one; the bench's wall-clock crons must be off meanwhile (startWorker's `crons: false`),
// or their invocations would be recorded in between.

import { localPassHours } from "./local-d1.mjs";
import { BASE, sleep } from "./worker.mjs";

const HOUR = 3_600_000;
const MINUTE_CRON = "* * * * *";
const SWEEP_CRON = "*/15 * * * *";
/** Rounds of a minute pass and a sweep, 15 minutes apart, allowed before the passes must be at rest. */
const MAX_ROUNDS = 400;

async function fire(cron, time) {
  const response = await fetch(`${BASE}/cdn-cgi/local/scheduled?cron=${encodeURIComponent(cron)}&time=${time}`);
  if (!response.ok) throw new Error(`scheduled ${cron} at ${time}: ${response.status} ${await response.text()}`);
}

const everWritten = async () => (await localPassHours(0)).reduce((sum, s) => sum + s.ever, 0);

/**
 * Brings the passes to rest (the sweeps finish their reconciliation cycle over what the bench wrote, and so on: until
 * two rounds in a row write nothing), then fires an hour of crons, 60 minute passes and 4 sweeps, and one pass of the
 * hour after, whose first invocation records the idle hour. Returns each shard's record of that hour: [{chunks, calls,
 * read, written}], and the rounds it took to come to rest.
 */
export async function measureIdleHour() {
  let at = Math.ceil(Date.now() / HOUR) * HOUR + 24 * HOUR;
  let still = 0;
  let rounds = 0;
  while (still < 2) {
    if (++rounds > MAX_ROUNDS) throw new Error(`the scheduled passes did not come to rest in ${MAX_ROUNDS} rounds`);
    const before = await everWritten();
    await fire(MINUTE_CRON, at);
    await fire(SWEEP_CRON, at + 1_000);
    await sleep(200);
    still = (await everWritten()) === before ? still + 1 : 0;
    at += 15 * 60_000;
  }
  const hour = Math.ceil(at / HOUR) * HOUR;
  for (let minute = 0; minute < 60; minute++) {
    await fire(MINUTE_CRON, hour + minute * 60_000);
    if (minute % 15 === 0) await fire(SWEEP_CRON, hour + minute * 60_000 + 1_000);
  }
  await fire(MINUTE_CRON, hour + HOUR);
  return { rounds, shards: await localPassHours(hour) };
}

/** The printed lines: each shard's idle hour, largest first, and a day of them against the target. */
export function idleHourLines({ rounds, shards }) {
  const lines = [
    `  An idle hour of scheduled passes (after ${rounds} rounds of a minute pass and a sweep to come to rest):`,
  ];
  for (const s of [...shards].sort((a, b) => b.chunks - a.chunks)) {
    const fmt = (n) => Math.round(n).toLocaleString("en");
    lines.push(
      `    shard of ${fmt(s.chunks)} chunks: ${s.calls} invocations, ${fmt(s.read)} rows read, ${fmt(s.written)} rows written ` +
        `(recording included); a day: ${fmt(24 * s.read)} read (target ≤ 10,000), ${fmt(24 * s.written)} written (target ≤ 100)`,
    );
  }
  return lines;
}
