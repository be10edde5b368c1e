import { checkedKv } from "./adapters/checked-kv";
import { checkedQueue } from "./adapters/checked-queue";
import { parseFaults, withD1Fault } from "./adapters/faults";
import { JOBS_KIND } from "./adapters/queue-producer";
import { isQueueOfKind } from "./adapters/queue-spread";
import { USAGE_KIND } from "./adapters/usage-queue";
import { SHARD_PREFIX } from "./control/shards";
import { checkedD1 } from "./db/checked-d1";
import { DEFAULT_QUERIES_PER_INVOCATION } from "./db/invocation-queries";
import type { Env } from "./env";

/**
 * The Worker's bindings as every handler sees them: D1, KV and Queues wrapped so that what the platform
 * would refuse is refused here too, in the platform's words (src/platform-limits.ts), locally as in
 * production. Local stand-ins accept more than the platform does; this way tests and `npm run dev` meet the
 * real limits. Made once per `env` object (the runtime hands every invocation of an isolate the same one): copying
 * the bindings at every invocation would be a measurable share of a search's worker time.
 */
export function checkedEnv(env: Env): Env {
  let checked = checkedEnvs.get(env);
  if (!checked) checkedEnvs.set(env, (checked = wrapBindings(env)));
  return checked;
}

const checkedEnvs = new WeakMap<Env, Env>();

function wrapBindings(env: Env): Env {
  const out: Record<string, unknown> = { ...env };
  // FAULTS' d1 entry (src/adapters/faults.ts) fails the tenant shards' queries; the other targets apply in buildServices.
  const faults = env.FAULTS ? parseFaults(env.FAULTS) : undefined;
  // By name: a service binding (ASSETS) is an RPC stub that answers every property with a function, so it
  // cannot be told from a D1 binding by its shape.
  for (const [name, value] of Object.entries(env)) {
    if (name === "CONTROL" && value) out[name] = checkedD1(value as D1Database);
    if (name.startsWith(SHARD_PREFIX) && value)
      out[name] = faults ? withD1Fault(checkedD1(value as D1Database), faults) : checkedD1(value as D1Database);
    // Every job and usage queue (JOBS, JOBS_<name>, USAGE, USAGE_<name>).
    if ((isQueueOfKind(JOBS_KIND, name) || isQueueOfKind(USAGE_KIND, name)) && typeof value === "object" && value)
      out[name] = queueOf(value as Queue<unknown>);
  }
  out.CACHE = env.CACHE && checkedKv(env.CACHE);
  out.OAUTH_KV = env.OAUTH_KV && checkedKv(env.OAUTH_KV);
  return out as unknown as Env;
}

const queues = new WeakMap<object, unknown>();
function queueOf<Body>(queue: Queue<Body>): Queue<Body> {
  let checked = queues.get(queue) as Queue<Body> | undefined;
  if (!checked) queues.set(queue, (checked = checkedQueue(queue)));
  return checked;
}

/** D1_QUERIES_PER_INVOCATION: 1,000 (Workers Paid, the default) or 50 (Free); a bad value falls back to the default. */
export function queriesPerInvocation(env: Env): number {
  const value = Number(env.D1_QUERIES_PER_INVOCATION);
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_QUERIES_PER_INVOCATION;
}
