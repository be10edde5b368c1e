import { Hono } from "hono";
import { openControl } from "../control/control-db";
import { isActive, readMove } from "../control/move-records";
import { forgetRoutes } from "../control/routing";
import { isShardName, shardNames } from "../control/shards";
import { getTenant } from "../control/tenants";
import { RECONCILE_BATCH, reconcileVectors } from "../core/memory/reconcile-vectors";
import { beginProjectDeletion } from "../core/ownership/delete-project";
import { beginTenantDeletion } from "../core/ownership/delete-tenant";
import { type DeletionTarget, runDeletionSteps } from "../core/ownership/run-deletion";
import type { Env } from "../env";
import { AppError, invalidParameter, notFound, permissionDenied } from "../errors";
import { deleteGrantsOfKeys } from "../oauth/key-grants";
import { noWait, openShard, openTenant, routeOf } from "../open-tenant";
import type { AdminBindings } from "./principal";

/** Bounded deletion steps a request runs; the rest goes to the queue ("delete" jobs, src/jobs/consumer.ts). */
export const DELETION_STEPS_PER_REQUEST = 1;
const MAX_PROJECT_NAME = 200;
const MAX_RECONCILE_LIMIT = 1000;

/**
 * Deleting data and repairing vector drift (mounted under /admin, behind its authentication).
 * DELETE /tenants/:tenantId           operator only; 202 while deleting, 200 when done, 404 once gone
 * DELETE /tenants/:tenantId/projects/:project   operator, or that tenant's admin key reaching the project
 * POST /reconcile?tenant=&shard=&cursor=&limit=   operator only: one tenant, or every tenant of one shard
 *                                                (the shard may be left out when the deployment has one)
 */
export const deletionRoutes = new Hono<AdminBindings>()
  .delete("/tenants/:tenantId", async (c) => {
    if (c.get("principal").kind !== "operator")
      throw permissionDenied("Only the operator (ADMIN_TOKEN) may delete a tenant");
    const tenantId = c.req.param("tenantId");
    await refuseWhileMoving(c.env.CONTROL, tenantId);
    const state = await beginTenantDeletion(c.env.CONTROL, tenantId);
    forgetRoutes({ tenantId });
    if (state === "absent")
      throw notFound(`Tenant '${tenantId}' does not exist (or its deletion has finished)`, { tenant_id: tenantId });
    return c.json(...(await deleteSome(c.env, (p) => c.executionCtx.waitUntil(p), { tenantId, project: null })));
  })
  .delete("/tenants/:tenantId/projects/:project", async (c) => {
    const { tenantId, project } = c.req.param();
    if (project.length > MAX_PROJECT_NAME)
      throw invalidParameter("project", `project is ${project.length} characters long; at most ${MAX_PROJECT_NAME}`);
    const principal = c.get("principal");
    if (principal.kind === "tenant" && principal.tenantId !== tenantId)
      throw permissionDenied("This key may only manage its own tenant");
    if (
      principal.kind === "tenant" &&
      principal.reach.projects !== null &&
      !principal.reach.projects.includes(project)
    ) {
      throw permissionDenied(
        `This key may not delete project '${project}' (its projects: ${principal.reach.projects.join(", ")})`,
        { projects: principal.reach.projects },
      );
    }
    const tenant = await getTenant(openControl(c.env.CONTROL), tenantId).catch(() => null);
    if (!tenant || tenant.deleting_since)
      throw notFound(`Tenant '${tenantId}' does not exist (or is being deleted)`, { tenant_id: tenantId });
    await refuseWhileMoving(c.env.CONTROL, tenantId);
    await beginProjectDeletion(openTenant(c.env, routeOf(tenant), noWait).scope.d1, tenantId, project);
    return c.json(...(await deleteSome(c.env, (p) => c.executionCtx.waitUntil(p), { tenantId, project })));
  })
  .post("/reconcile", async (c) => {
    if (c.get("principal").kind !== "operator") throw permissionDenied("Only the operator (ADMIN_TOKEN) may reconcile");
    const tenantId = c.req.query("tenant");
    const cursor = integerQuery(c.req.query("cursor"), "cursor", 0, Number.MAX_SAFE_INTEGER, 0);
    const limit = integerQuery(c.req.query("limit"), "limit", 1, MAX_RECONCILE_LIMIT, RECONCILE_BATCH);
    const shard = c.req.query("shard");
    const shards = shardNames(c.env);
    if (shards.length === 0)
      throw new AppError(
        "INTERNAL_ERROR",
        "This deployment has no data shard: bind at least one D1 database named SHARD_<name> (wrangler.toml)",
      );
    if (tenantId === undefined && shard === undefined && shards.length > 1) {
      throw invalidParameter(
        "shard",
        `Name a tenant (?tenant=) or a shard (?shard=) to reconcile; this deployment has: ${shards.join(", ")}`,
      );
    }
    const waitUntil = (p: Promise<unknown>) => c.executionCtx.waitUntil(p);
    if (tenantId !== undefined) {
      const tenant = await getTenant(openControl(c.env.CONTROL), tenantId).catch(() => null);
      if (!tenant) throw notFound(`Tenant '${tenantId}' does not exist`, { parameter: "tenant", tenant_id: tenantId });
      if (shard !== undefined && shard !== tenant.shard)
        throw invalidParameter("shard", `Tenant '${tenantId}' lives on ${tenant.shard}, not ${shard}; leave shard out`);
      const { scope, services } = openTenant(c.env, routeOf(tenant), waitUntil);
      return c.json(await reconcileVectors(scope.d1, services, { tenantId, cursor, limit }));
    }
    {
      const name = shard ?? shards[0]!;
      if (!isShardName(c.env, name))
        throw invalidParameter("shard", `No data shard '${name}'; this deployment has: ${shards.join(", ")}`);
      const { d1, services } = openShard(c.env, name, waitUntil);
      return c.json(await reconcileVectors(d1, services, { tenantId, cursor, limit }));
    }
  });

/** 409 while the tenant moves between shards: a deletion would race the copy. */
async function refuseWhileMoving(control: D1Database, tenantId: string): Promise<void> {
  const move = await readMove(control, tenantId);
  if (move && isActive(move.state))
    throw new AppError("CONFLICT", `Tenant '${tenantId}' is moving to ${move.target}; delete once the move is done`, {
      tenant_id: tenantId,
      move: move.state,
    });
}

/** Runs the request's share of a deletion and queues the rest: 200 when it finished, else 202. */
async function deleteSome(
  env: Env,
  waitUntil: (promise: Promise<unknown>) => void,
  target: DeletionTarget,
): Promise<[Record<string, unknown>, 200 | 202]> {
  const tenant = await getTenant(openControl(env.CONTROL), target.tenantId).catch(() => null);
  if (!tenant)
    throw new AppError("NOT_FOUND", `Tenant '${target.tenantId}' does not exist`, { tenant_id: target.tenantId });
  const { scope, services } = openTenant(env, routeOf(tenant), waitUntil);
  const data = scope.d1;
  const run = await runDeletionSteps(
    { control: env.CONTROL, data },
    services,
    target,
    (keyIds) => deleteGrantsOfKeys(env, keyIds),
    DELETION_STEPS_PER_REQUEST,
  );
  if (!run.done) await services.jobs.send([{ type: "delete", ...target }]);
  const body = {
    tenant_id: target.tenantId,
    ...(target.project === null ? {} : { project: target.project }),
    status: run.done ? "deleted" : "deleting",
  };
  return [body, run.done ? 200 : 202];
}

function integerQuery(raw: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max)
    throw invalidParameter(name, `${name} must be an integer from ${min} to ${max} (got '${raw.slice(0, 40)}')`);
  return n;
}
