import { type BillableUnits, noUnits, UnitMeter } from "../billable-units";
import { shardDatabase, shardNames } from "../control/shards";
import { meteredD1 } from "../db/metered-d1";
import type { Env } from "../env";
import { type PassInvocation, recordInvocation } from "./pass-usage";
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
