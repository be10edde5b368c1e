import { UnitMeter } from "../billable-units";
import { shardDatabase, shardNames } from "../control/shards";
import { addHourRows, hourRows } from "../core/tenants/usage-hours";
import { meteredD1 } from "../db/metered-d1";
import type { Env } from "../env";

/** The tenant id under which usage_hours keeps a shard's own work (scheduled passes); no tenant has it. */
export const SHARD_WORK = "";

/**
 * Runs a scheduled pass over the shards with each shard's D1 charging a meter of its own, then records in each shard
 * that the pass wrote to what it cost there, as job `name` of SHARD_WORK (one statement; a pass that wrote nothing
 * records nothing, so an idle minute costs no write).
 */
export async function meteredPass<T>(env: Env, name: string, pass: (env: Env) => Promise<T>): Promise<T> {
  const meters = new Map(shardNames(env).map((shard) => [shard, new UnitMeter()]));
  const shards = [...meters].map(([shard, meter]) => [shard, meteredD1(shardDatabase(env, shard), meter)]);
  try {
    return await pass({ ...env, ...Object.fromEntries(shards) });
  } finally {
    for (const [shard, meter] of meters) {
      await meter.settled();
      if (meter.current.d1RowsWritten === 0) continue;
      const entry = {
        tenantId: SHARD_WORK,
        at: Date.now(),
        source: "job" as const,
        name,
        project: null,
        failed: false,
      };
      await addHourRows(shardDatabase(env, shard), hourRows([{ ...entry, units: meter.current }]))
        .run()
        .catch((error) => console.error(`recording what ${name} cost on ${shard} failed`, error));
    }
  }
}
