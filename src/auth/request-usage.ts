import type { Context, MiddlewareHandler } from "hono";
import { UnitMeter } from "../billable-units";
import { DEPLOYMENT, OVERHEAD, usageBuffer } from "../control/usage-buffer";
import type { AppBindings } from "../http/context";
import { meteredEnv } from "../metered-env";
import { labelWork } from "../work-labels";

/**
 * Every request runs with its bindings metered (metered-env.ts): its tool calls charge their own units (mcp/dispatch.ts),
 * and what it spends beside them (the key's lookup and last use, an OAuth token's read, the admin API, OAuth's
 * endpoints) is recorded once the request's work has ended, for the tenant it was for, else for the deployment
 * (control/usage-buffer.ts).
 */
export const meterRequest: MiddlewareHandler<AppBindings> = async (c, next) => {
  const env = c.env;
  const meter = new UnitMeter();
  c.env = meteredEnv(env, meter);
  try {
    await next();
  } finally {
    const record = async () => {
      await meter.settled();
      const [tenantId, name] = [ownerOf(c), overheadName(c.req.path)];
      labelWork({ tenantId, source: "job", name, project: null, overhead: true });
      await usageBuffer.addOverhead(env, tenantId, name, meter.takeOwn());
    };
    c.executionCtx.waitUntil(record().catch((error) => console.error("usage outside tool calls failed", error)));
  }
};

/** The tenant a request was for: its key's, or the one an admin path names; else the deployment's. */
function ownerOf(c: Context<AppBindings>): string {
  const caller = c.get("caller") as AppBindings["Variables"]["caller"] | undefined;
  if (caller) return caller.tenantId;
  const named = c.req.path.match(/^\/admin\/tenants\/([^/]+)/)?.[1];
  if (named) return decoded(named) ?? DEPLOYMENT;
  // The admin API's caller (admin/principal.ts): a tenant's admin key acts for its tenant.
  const principal = (c.get as (key: string) => unknown)("principal") as { tenantId?: string } | undefined;
  return principal?.tenantId ?? DEPLOYMENT;
}

function overheadName(path: string): string {
  if (path.startsWith("/admin")) return OVERHEAD.admin;
  if (path.startsWith("/oauth") || path.startsWith("/.well-known")) return OVERHEAD.oauth;
  return OVERHEAD.requests;
}

function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}
