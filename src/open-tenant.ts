import { UnitMeter } from "./billable-units";
import type { QuotaOverrides } from "./config";
import { openTenantSession } from "./control/bookmarks";
import { type TenantRoute, tenantRoutes, tenantVectorIndex } from "./control/routing";
import { shardDatabase } from "./control/shards";
import type { Tenant } from "./control/tenants";
import { vectorIndexBinding } from "./control/vector-indexes";
import { meteredD1, meterOf, unmetered } from "./db/metered-d1";
import { type TenantScope, tenantScope } from "./db/scope";
import type { Env } from "./env";
import { envMeter } from "./metered-env";
import type { Services } from "./ports";
import { buildServices } from "./services";

/** Who is asking, for a caller's scope: a project-limited key's projects and the tenant's quota overrides. */
export interface TenantAccess {
  projects?: readonly string[] | null;
  quotas?: QuotaOverrides | null;
  /**
   * A request's D1 session: reads start at the newest bookmark known for the tenant or the one presented
   * (x-d1-bookmark); `finish` then gives the header to answer with. Absent, statements go to the primary.
   */
  bookmark?: string | null;
  /** What the tenant's work charges: by default the env's meter (its request's or batch's), else a meter of its own. */
  meter?: UnitMeter;
}

export interface OpenedTenant {
  scope: TenantScope;
  services: Services;
  /** After the request: the session's bookmark for the response header (null without a session). */
  finish(): string | null;
}

/** The route of a tenant as the admin API reads it. */
export function routeOf(tenant: Tenant): TenantRoute {
  return { tenantId: tenant.tenant_id, shard: tenant.shard, vectorIndex: tenant.vector_index ?? null };
}

type WaitUntil = (promise: Promise<unknown>) => void;

/** For work that has nothing to finish after it returns. */
export const noWait: WaitUntil = () => undefined;

/**
 * The one way in to a tenant's data: its shard's D1 (through a session when `access.bookmark` is given), the scope
 * every query goes through, and the adapters over the same database and the tenant's own vector index. All of it
 * charges the meter of the env's request, batch or pass (metered-env.ts), else a meter of its own.
 */
export function openTenant(
  env: Env,
  route: TenantRoute,
  waitUntil: WaitUntil,
  access: TenantAccess = {},
): OpenedTenant {
  // Metered once, below, by the services' meter: the env's metering of the shard would count the session twice.
  const shard = unmetered(shardDatabase(env, route.shard));
  const session =
    access.bookmark !== undefined ? openTenantSession(shard, route.shard, route.tenantId, access.bookmark) : null;
  const d1 = session?.database ?? shard;
  const meter = access.meter ?? envMeter(env) ?? new UnitMeter();
  const services = buildServices(env, d1, { tenantIndex: route.vectorIndex }, waitUntil, meter);
  return {
    scope: tenantScope(meteredD1(d1, services.meter), route.tenantId, access.projects ?? null, access.quotas ?? null),
    services,
    finish: () => session?.finish() ?? null,
  };
}

/** A tenant opened by id: its route read from the control database (cached per isolate); null when it is gone. */
export async function openTenantById(env: Env, tenantId: string, waitUntil: WaitUntil): Promise<OpenedTenant | null> {
  const route = (await tenantRoutes(env.CONTROL, [tenantId])).get(tenantId);
  return route ? openTenant(env, route, waitUntil) : null;
}

/**
 * Work over every tenant of one shard (reconciling it with the vector index): the shard's D1 and adapters whose
 * Vectorize index is looked up per tenant, and for a page of tenants at once. Both charge the meter of whoever
 * opened it: the scheduled pass that meters the shard, or the env's request; else a meter of its own.
 */
export function openShard(env: Env, shard: string, waitUntil: WaitUntil): { d1: D1Database; services: Services } {
  const found = shardDatabase(env, shard);
  const meter = meterOf(found) ?? envMeter(env) ?? new UnitMeter();
  const d1 = meteredD1(found, meter);
  const locate = async (tenantId: string) => vectorIndexBinding(env, await tenantVectorIndex(env.CONTROL, tenantId));
  const locateMany = (tenantIds: string[]) => tenantRoutes(env.CONTROL, tenantIds);
  return { d1, services: buildServices(env, d1, { locate, locateMany }, waitUntil, meter) };
}
