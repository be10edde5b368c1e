import { AppError } from "../errors";
import { type ShardBindings, shardDatabase, shardNames } from "./shards";

export interface ShardFill {
  shard: string;
  /** The database file's size as D1 reports it after a query (meta.size_after), in bytes. */
  bytes: number;
  tenants: number;
}

/**
 * How full each shard is: its size as D1 itself reports it (every result's meta.size_after, here of a
 * `SELECT 1`: one parallel round trip per shard) and its tenant count from the control database.
 */
export async function shardFill(env: ShardBindings, control: D1Database): Promise<ShardFill[]> {
  const names = shardNames(env);
  const [sizes, counts] = await Promise.all([
    Promise.all(
      names.map(async (name) => (await shardDatabase(env, name).prepare("SELECT 1").run()).meta.size_after ?? 0),
    ),
    control.prepare("SELECT shard, COUNT(*) AS n FROM tenants GROUP BY shard").all<{ shard: string; n: number }>(),
  ]);
  const tenants = new Map(counts.results.map((r) => [r.shard, r.n]));
  return names.map((shard, i) => ({ shard, bytes: sizes[i]!, tenants: tenants.get(shard) ?? 0 }));
}

/** A new tenant's shard: the one with the least data; on equal sizes the fewest tenants, then the first name. */
export async function placeNewTenant(env: ShardBindings, control: D1Database): Promise<string> {
  const fill = await shardFill(env, control);
  if (fill.length === 0)
    throw new AppError(
      "INTERNAL_ERROR",
      "This deployment has no data shard: bind at least one D1 database named SHARD_<name> (wrangler.toml)",
    );
  if (fill.length === 1) return fill[0]!.shard;
  fill.sort((a, b) => a.bytes - b.bytes || a.tenants - b.tenants);
  return fill[0]!.shard;
}
