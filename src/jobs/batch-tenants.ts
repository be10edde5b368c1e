import { type TenantRoute, tenantRoutes } from "../control/routing";
import type { Env } from "../env";
import { type OpenedTenant, openTenant } from "../open-tenant";
import { withSharedEmbeddings } from "./shared-embeddings";

export interface BatchTenants {
  /** A job's tenant, opened over the shard that holds it (once a batch); null when the tenant no longer exists. */
  of(tenantId: string): OpenedTenant | null;
  /** Puts vectors embedded for the whole batch in front of every tenant's embedder (shared-embeddings.ts). */
  useEmbeddings(shared: Map<string, Float32Array>): void;
}

/**
 * The tenants a batch's messages name, each opened once over the shard the control database says it lives on now
 * (one control query at most; routing.ts caches the routes). A re-index job names its shard instead.
 */
export async function tenantsOfBatch(
  messages: readonly Message<{ tenantId: string | null }>[],
  env: Env,
  ctx: ExecutionContext,
): Promise<BatchTenants> {
  const tenantIds = messages.flatMap((m) => (m.body.tenantId === null ? [] : [m.body.tenantId]));
  const routes = tenantIds.length > 0 ? await tenantRoutes(env.CONTROL, tenantIds) : new Map<string, TenantRoute>();
  const opened = new Map<string, OpenedTenant>();
  let shared = new Map<string, Float32Array>();
  const sharing = (tenant: OpenedTenant): OpenedTenant =>
    shared.size === 0
      ? tenant
      : {
          ...tenant,
          services: { ...tenant.services, embedder: withSharedEmbeddings(tenant.services.embedder, shared) },
        };
  return {
    of(tenantId) {
      const route = routes.get(tenantId);
      if (route === undefined) return null;
      let tenant = opened.get(tenantId);
      if (!tenant) opened.set(tenantId, (tenant = sharing(openTenant(env, route, (p) => ctx.waitUntil(p)))));
      return tenant;
    },
    useEmbeddings(vectors) {
      shared = vectors;
      for (const [tenantId, tenant] of opened) opened.set(tenantId, sharing(tenant));
    },
  };
}
