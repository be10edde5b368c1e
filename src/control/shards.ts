import { AppError } from "../errors";

/**
 * Data shards are the D1 bindings whose names start with SHARD_ (wrangler.toml): adding a shard is a new
 * binding plus a migrate command, no code change. A shard's name is its binding's name; the control
 * database records it for each tenant, so a binding is never renamed once it holds tenants.
 */
export const SHARD_PREFIX = "SHARD_";

/** The Worker's env (or any object of bindings): shards are found among its properties. */
export type ShardBindings = object;

const binding = (env: ShardBindings, name: string): unknown => (env as Record<string, unknown>)[name];

/** The deployment's shard names, sorted (SHARD_0, SHARD_1, ...). */
export function shardNames(env: ShardBindings): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith(SHARD_PREFIX) && isD1(binding(env, name)))
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
}

/** The D1 binding of a shard, or INTERNAL_ERROR when the deployment has no such binding (a removed shard). */
export function shardDatabase(env: ShardBindings, shard: string): D1Database {
  const found = shard.startsWith(SHARD_PREFIX) ? binding(env, shard) : undefined;
  if (!isD1(found))
    throw new AppError("INTERNAL_ERROR", `This deployment has no data shard '${shard}' (no D1 binding of that name)`, {
      shard,
    });
  return found;
}

export function isShardName(env: ShardBindings, shard: string): boolean {
  return shard.startsWith(SHARD_PREFIX) && isD1(binding(env, shard));
}

function isD1(value: unknown): value is D1Database {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as D1Database).prepare === "function" &&
    typeof (value as D1Database).batch === "function"
  );
}
