import { type BillableUnits, billsAnything, noUnits, UnitMeter } from "../billable-units";
import { shardDatabase, shardNames } from "../control/shards";
import { addHourRows, hourRows } from "../core/tenants/usage-hours";
import { meteredD1 } from "../db/metered-d1";
import type { Env } from "../env";
import { type PassInvocation, recordInvocation, SHARD_WORK } from "./pass-usage";
import { type StatementTally, talliedD1 } from "./statement-tally";

/** A scheduled pass: its name in the hour's log, and the work, given the env whose shards charge it. */
export type ScheduledPass = readonly [name: string, run: (env: Env) => Promise<unknown>];

/**
 * Runs one cron invocation's passes in turn (the first that throws ends it, as an unhandled error would), each
 * shard's D1 charging a meter of its own and telling its statements apart, then records what the invocation cost on
 * each shard (pass-usage.ts: at once where it wrote, else with the hour's first invocation), as SHARD_WORK's job
 * PASSES_JOB at `at`, the invocation's scheduled time.
 */
export async function meteredPasses(env: Env, at: number, passes: readonly ScheduledPass[]): Promise<void> {
  const meters = new Map(shardNames(env).map((shard) => [shard, new UnitMeter()]));
  const costs = new Map(
    [...meters.keys()].map((shard) => [shard, new Map<string, { read: number; written: number }>()]),
  );
  const statements = new Map([...meters.keys()].map((shard) => [shard, new Map() as StatementTally]));
  let failed = false;
  try {
    for (const [name, run] of passes) {
      const before = new Map([...meters].map(([shard, meter]) => [shard, { ...meter.current }]));
      const bindings = [...meters].map(([shard, meter]) => [
        shard,
        meteredD1(talliedD1(shardDatabase(env, shard), statements.get(shard)!), meter),
      ]);
      try {
        await run({ ...env, ...Object.fromEntries(bindings) });
      } finally {
        for (const [shard, meter] of meters) {
          await meter.settled();
          costs.get(shard)!.set(name, rowsSince(before.get(shard)!, meter.current));
        }
      }
    }
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    for (const [shard, meter] of meters) {
      const invocation: PassInvocation = {
        at,
        failed,
        units: { ...noUnits(), ...meter.current },
        passes: costs.get(shard)!,
        statements: statements.get(shard)!,
      };
      await recordInvocation(shardDatabase(env, shard), shard, invocation);
    }
  }
}

function rowsSince(before: BillableUnits, now: BillableUnits): { read: number; written: number } {
  return { read: now.d1RowsRead - before.d1RowsRead, written: now.d1RowsWritten - before.d1RowsWritten };
}

/**
 * Work over one shard that is no tenant's and no cron's (a re-index job), its D1 charging a meter of its own, then
 * recorded on that shard as SHARD_WORK's job `name`, in one statement: such work writes the shard anyway.
 */
export async function meteredShardWork<T>(
  env: Env,
  shard: string,
  name: string,
  work: (d1: D1Database, meter: UnitMeter) => Promise<T>,
): Promise<T> {
  const meter = new UnitMeter();
  const at = Date.now();
  let failed = true;
  try {
    const result = await work(meteredD1(shardDatabase(env, shard), meter), meter);
    failed = false;
    return result;
  } finally {
    await meter.settled();
    if (billsAnything(meter.current)) {
      const entry = { tenantId: SHARD_WORK, at, source: "job" as const, name, project: null, failed };
      await addHourRows(shardDatabase(env, shard), hourRows([{ ...entry, units: meter.current }]))
        .run()
        .catch((error) => console.error(`recording what ${name} cost on ${shard} failed`, error));
    }
  }
}
