import { meteredAi, meteredKv, meteredQueue, meteredR2 } from "./adapters/metered-bindings";
import { JOBS_KIND } from "./adapters/queue-producer";
import { isQueueOfKind } from "./adapters/queue-spread";
import type { UnitMeter } from "./billable-units";
import { SHARD_PREFIX } from "./control/shards";
import { meteredD1 } from "./db/metered-d1";
import type { Env } from "./env";

const ENV_METER = Symbol("the meter of a metered env");

/**
 * The bindings Cloudflare bills, charging `meter` (billable-units.ts): the control database, every data shard (unless
 * `shards` is false: a scheduled pass meters each shard on its own), the job queues, both KV namespaces, Workers AI
 * and the documents' R2 bucket. A request, a queue batch or a pass meters its env once at its start, so no handle it
 * reaches goes uncounted; what its tenants' services meter again charges the services' meter instead (never both). The usage queues stay
 * as they are: a usage message carries its own cost, counted where it is built.
 */
export function meteredEnv(env: Env, meter: UnitMeter, options: { shards?: boolean } = {}): Env {
  const out: Record<string | symbol, unknown> = { ...env, [ENV_METER]: meter };
  for (const [name, value] of Object.entries(env)) {
    if (!value || typeof value !== "object") continue;
    if (name === "CONTROL" || (options.shards !== false && name.startsWith(SHARD_PREFIX)))
      out[name] = meteredD1(value as D1Database, meter);
    else if (isQueueOfKind(JOBS_KIND, name)) out[name] = meteredQueue(value as Queue<unknown>, meter);
  }
  out.CACHE = meteredKv(env.CACHE, meter);
  out.OAUTH_KV = meteredKv(env.OAUTH_KV, meter);
  out.AI = meteredAi(env.AI, meter);
  out.DOCUMENTS = meteredR2(env.DOCUMENTS, meter);
  return out as unknown as Env;
}

/** The meter a metered env charges, or null for one nothing meters (a test's own env). */
export function envMeter(env: object): UnitMeter | null {
  return ((env as Record<symbol, unknown>)[ENV_METER] as UnitMeter | undefined) ?? null;
}
