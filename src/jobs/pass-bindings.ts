import { shardDatabase, shardNames } from "../control/shards";
import { meterOf } from "../db/metered-d1";
import type { Env } from "../env";
import { meteredEnv } from "../metered-env";

/**
 * A scheduled pass whose bindings beyond the shards (the control database, the job queues, KV, Workers AI) charge
 * the first shard's meter, so what the pass spends outside any shard (the sweep's control reads and the jobs it
 * re-sends from them) is recorded with its work on that shard, under the shards' own id (metered-pass.ts). A shard's
 * own sends are charged to that shard (jobProducer with the shard's meter).
 */
export function chargingFirstShard<T>(pass: (env: Env) => Promise<T>): (env: Env) => Promise<T> {
  return (env) => {
    const first = shardNames(env)[0];
    const meter = first === undefined ? null : meterOf(shardDatabase(env, first));
    return pass(meter ? meteredEnv(env, meter, { shards: false }) : env);
  };
}
