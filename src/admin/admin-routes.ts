import { type Context, Hono } from "hono";
import { z } from "zod";
import { jobQueues, QueueProducer } from "../adapters/queue-producer";
import { QUOTA_NAMES, type QuotaName, readConfig } from "../config";
import { openControl } from "../control/control-db";
import { deploymentUsage } from "../control/deployment-usage";
import { listJobFailures } from "../control/job-failures";
import { moveView, readMove } from "../control/move-records";
import { beginMove } from "../control/moves";
import { placeNewTenant, shardFill } from "../control/placement";
import { forgetRoutes } from "../control/routing";
import { isShardName, shardNames } from "../control/shards";
import {
  createApiKey,
  createTenant,
  getApiKey,
  getTenant,
  listApiKeys,
  listTenants,
  patchTenantQuotas,
  revokeApiKey,
  type Tenant,
} from "../control/tenants";
import { placeVectorIndex, vectorIndexFill, vectorIndexNames } from "../control/vector-indexes";
import { reachCovers, SCOPES, type Scope } from "../core/tenants/api-keys";
import { tenantLimits } from "../core/tenants/quotas";
import { tenantStats } from "../core/tenants/tenant-stats";
import { AppError, invalidParameter, toAppError } from "../errors";
import { errorResponse } from "../http/responses";
import { revokeGrantsOfKey } from "../oauth/key-grants";
import { noWait, openTenant, routeOf } from "../open-tenant";
import { totalsOutput } from "../tools/units-output";
import { validationError } from "../validation";
import { deletionRoutes } from "./deletion-routes";
import { grantAdminRoutes } from "./grant-routes";
import { ownershipRoutes } from "./ownership-routes";
import {
  type AdminBindings,
  authenticateAdmin,
  requireAllProjects,
  requireOperator,
  requireReach,
  requireTenantAccess,
} from "./principal";

const tenantBody = z.object({
  name: z.string().trim().min(1).max(200),
  // At most 40: a Vectorize vector id is `<tenant>:<chunk id>` and Vectorize takes ids of at most 64 bytes (40 + 1 + a
  // 16-digit chunk id = 57), and its namespace (the tenant) at most 64.
  tenant_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{3,40}$/, "3-40 letters, digits, '_' or '-'")
    .optional(),
  /** The shard to place it on; by default the one with the least data (placement.ts). */
  shard: z.string().min(1).max(64).optional(),
  /** The Vectorize index for its vectors; by default the one with the fewest vectors (vector-indexes.ts). */
  vector_index: z.string().min(1).max(64).optional(),
});
const moveBody = z.object({ shard: z.string().min(1).max(64) }).strict();
/** A quota's override: a whole number > 0, "unlimited", or null / 0 for the deployment's default. */
const quotaValue = z.union([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), z.literal("unlimited"), z.null()]);
const tenantPatchBody = z
  .object({
    quotas: z
      .object(
        Object.fromEntries(QUOTA_NAMES.map((name) => [name, quotaValue.optional()])) as Record<
          QuotaName,
          z.ZodOptional<typeof quotaValue>
        >,
      )
      .strict(),
  })
  .strict();
const keyBody = z.object({
  name: z.string().trim().min(1).max(200).default("api key"),
  scopes: z
    .array(z.enum(SCOPES as [string, ...string[]]))
    .min(1)
    .default(["read", "write"]),
  projects: z.array(z.string().min(1).max(200)).min(1).max(100).nullable().default(null),
});

/** A tenant as the admin API shows one: with the quotas that apply to it (null = unlimited) beside its overrides. */
function withQuotas(c: Context<AdminBindings>, tenant: Tenant): Tenant & { quotas: ReturnType<typeof tenantLimits> } {
  return { ...tenant, quotas: limitsOf(c, tenant) };
}

/** The tenant's limits; calls_per_minute is null (not enforced) in a deployment without TENANT_RATE_LIMITER. */
function limitsOf(c: Context<AdminBindings>, tenant: Tenant): ReturnType<typeof tenantLimits> {
  const limits = tenantLimits(readConfig(c.env).quotas, tenant.quota_overrides);
  return c.env.TENANT_RATE_LIMITER ? limits : { ...limits, calls_per_minute: null };
}

async function parseBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.output<T>> {
  const raw = await c.req.text();
  let json: unknown = {};
  if (raw.trim() !== "") {
    try {
      json = JSON.parse(raw);
    } catch {
      throw new AppError("INVALID_PARAMETER", "Request body is not valid JSON", { parameter: "body" });
    }
  }
  const parsed = schema.safeParse(json, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error);
  return parsed.data;
}

export const adminRoutes = new Hono<AdminBindings>()
  .use("*", authenticateAdmin)
  .post("/tenants", async (c) => {
    requireOperator(c);
    const body = await parseBody(c, tenantBody);
    if (body.shard !== undefined && !isShardName(c.env, body.shard)) {
      throw invalidParameter("shard", `No shard '${body.shard}'; this deployment has: ${shardNames(c.env).join(", ")}`);
    }
    const vectorize = readConfig(c.env).vectorIndex === "vectorize";
    if (body.vector_index !== undefined && !(vectorize && vectorIndexNames(c.env).includes(body.vector_index))) {
      const have = vectorize
        ? `this deployment has: ${vectorIndexNames(c.env).join(", ")}`
        : "this deployment keeps vectors in its local index (VECTOR_INDEX=local)";
      throw invalidParameter("vector_index", `No Vectorize index '${body.vector_index}'; ${have}`);
    }
    const [shard, vectorIndex] = await Promise.all([
      body.shard ?? placeNewTenant(c.env, c.env.CONTROL),
      // The local index lives in the tenant's shard: nothing to choose.
      vectorize ? (body.vector_index ?? placeVectorIndex(c.env, c.env.CONTROL)) : null,
    ]);
    return c.json(
      await createTenant(openControl(c.env.CONTROL), { name: body.name, id: body.tenant_id, shard, vectorIndex }),
      201,
    );
  })
  .get("/tenants", async (c) => {
    requireOperator(c);
    return c.json({ tenants: await listTenants(openControl(c.env.CONTROL)) });
  })
  .get("/tenants/:tenantId", async (c) => {
    const tenantId = c.req.param("tenantId");
    requireTenantAccess(c, tenantId);
    const [tenant, move] = await Promise.all([
      getTenant(openControl(c.env.CONTROL), tenantId),
      readMove(c.env.CONTROL, tenantId),
    ]);
    return c.json({ ...withQuotas(c, tenant), ...(move ? { move: moveView(move) } : {}) });
  })
  .patch("/tenants/:tenantId", async (c) => {
    requireOperator(c);
    const tenantId = c.req.param("tenantId");
    const body = await parseBody(c, tenantPatchBody);
    const ceiling = readConfig(c.env).quotas.calls_per_minute;
    const perMinute = body.quotas.calls_per_minute;
    if (typeof perMinute === "number" && perMinute > ceiling) {
      throw invalidParameter(
        "quotas.calls_per_minute",
        `calls_per_minute may be at most ${ceiling}, TENANT_RATE_LIMITER's limit (TENANT_CALLS_PER_MINUTE); raise both to allow more, or set "unlimited" to lift the tenant's limit`,
      );
    }
    // 0 means the default, as in the env vars: the override is removed.
    const patch = Object.fromEntries(
      Object.entries(body.quotas).map(([name, value]) => [name, value === 0 ? null : value]),
    ) as Record<string, number | "unlimited" | null>;
    const tenant = await patchTenantQuotas(openControl(c.env.CONTROL), tenantId, patch);
    // This isolate at once; every other within the routing cache's 15 s.
    forgetRoutes({ tenantId });
    return c.json(withQuotas(c, tenant));
  })
  .post("/tenants/:tenantId/move", async (c) => {
    requireOperator(c);
    const tenantId = c.req.param("tenantId");
    const body = await parseBody(c, moveBody);
    const move = await beginMove(c.env, tenantId, body.shard);
    await new QueueProducer(jobQueues(c.env)).send([{ type: "move", tenantId }]);
    return c.json({ tenant_id: tenantId, shard: move.source, move }, 202);
  })
  .post("/tenants/:tenantId/keys", async (c) => {
    const tenantId = c.req.param("tenantId");
    requireTenantAccess(c, tenantId);
    const body = await parseBody(c, keyBody);
    const scopes = body.scopes as Scope[];
    requireReach(c, { scopes, projects: body.projects }, "create");
    const key = await createApiKey(openControl(c.env.CONTROL), {
      tenantId,
      name: body.name,
      scopes,
      projects: body.projects,
    });
    return c.json({ ...key, note: "Store api_key now: it is shown only once." }, 201);
  })
  .get("/tenants/:tenantId/keys", async (c) => {
    const tenantId = c.req.param("tenantId");
    requireTenantAccess(c, tenantId);
    const principal = c.get("principal");
    const keys = await listApiKeys(openControl(c.env.CONTROL), tenantId);
    return c.json({ keys: principal.kind === "tenant" ? keys.filter((k) => reachCovers(principal.reach, k)) : keys });
  })
  .get("/tenants/:tenantId/stats", async (c) => {
    const tenantId = c.req.param("tenantId");
    requireTenantAccess(c, tenantId);
    requireAllProjects(c);
    const tenant = await getTenant(openControl(c.env.CONTROL), tenantId);
    return c.json(
      await tenantStats(openTenant(c.env, routeOf(tenant), noWait).scope.d1, tenantId, limitsOf(c, tenant)),
    );
  })
  .get("/shards", async (c) => {
    requireOperator(c);
    const vectorize = readConfig(c.env).vectorIndex === "vectorize";
    const [shards, vectorIndexes] = await Promise.all([
      shardFill(c.env, c.env.CONTROL),
      vectorize ? vectorIndexFill(c.env, c.env.CONTROL) : null,
    ]);
    return c.json({ shards, ...(vectorIndexes ? { vector_indexes: vectorIndexes } : {}) });
  })
  // The Free plan's allowances are the account's: only the whole deployment's day, shard work included, meets them.
  .get("/usage", async (c) => {
    requireOperator(c);
    const days = Math.min(30, Math.max(1, Math.floor(Number(c.req.query("days") ?? 1)) || 1));
    const usage = await deploymentUsage(c.env, Date.now() - days * 86_400_000, days);
    return c.json({ days, tenants: usage.tenants, shards: usage.shards, totals: totalsOutput(usage.totals) });
  })
  .get("/job-failures", async (c) => {
    requireOperator(c);
    const limit = Math.min(500, Math.max(1, Number(c.req.query("limit") ?? 100) || 100));
    return c.json({ failures: await listJobFailures(c.env.CONTROL, limit) });
  })
  .delete("/keys/:keyId", async (c) => {
    const principal = c.get("principal");
    const tenantId = principal.kind === "tenant" ? principal.tenantId : null;
    const db = openControl(c.env.CONTROL);
    requireReach(c, await getApiKey(db, c.req.param("keyId"), tenantId), "revoke");
    const revoked = await revokeApiKey(db, c.req.param("keyId"), tenantId);
    forgetRoutes({ keyId: revoked.key_id });
    // The key's OAuth grants and tokens go with it (tokens are refused from now on even if this fails).
    return c.json({ ...revoked, oauth_grants_revoked: await revokeGrantsOfKey(c.env, c.req.url, revoked.key_id) });
  })
  .route("/", grantAdminRoutes)
  .route("/", deletionRoutes)
  .route("/", ownershipRoutes)
  .onError((error, c) => errorResponse(c, toAppError(error)));
