import type { Context, MiddlewareHandler } from "hono";
import { presentedKey } from "../auth/middleware";
import { routeKey } from "../control/routing";
import { type KeyReach, reachCovers, scopeAllows } from "../core/tenants/api-keys";
import { secretEquals } from "../crypto";
import type { Env } from "../env";
import { AppError, permissionDenied } from "../errors";
import { errorResponse } from "../http/responses";

/**
 * Who may call /admin: the operator (the ADMIN_TOKEN secret, every tenant) or a tenant admin
 * (an API key with the `admin` scope, confined to its own tenant's keys).
 */
export type AdminPrincipal = { kind: "operator" } | { kind: "tenant"; tenantId: string; reach: KeyReach };
export type AdminBindings = { Bindings: Env; Variables: { principal: AdminPrincipal } };

export const authenticateAdmin: MiddlewareHandler<AdminBindings> = async (c, next) => {
  const presented = presentedKey(c.req.raw.headers);
  const adminToken = c.env.ADMIN_TOKEN;
  if (presented && adminToken && (await secretEquals(presented, adminToken))) {
    c.set("principal", { kind: "operator" });
    return next();
  }
  const key = presented ? await routeKey(c.env.CONTROL, presented) : null;
  if (key && scopeAllows(key.scopes, "admin")) {
    c.set("principal", {
      kind: "tenant",
      tenantId: key.tenantId,
      reach: { scopes: key.scopes, projects: key.projects },
    });
    return next();
  }
  if (key) return errorResponse(c, permissionDenied("This API key lacks the 'admin' scope"));
  c.header("WWW-Authenticate", 'Bearer realm="context-edge-admin"');
  return c.json(
    new AppError("PERMISSION_DENIED", "Admin API needs the ADMIN_TOKEN or an API key with the 'admin' scope").toJSON(),
    401,
  );
};

export function requireOperator(c: Context<AdminBindings>): void {
  if (c.get("principal").kind !== "operator") throw permissionDenied("Only the operator (ADMIN_TOKEN) may do this");
}

/** A tenant admin may only act on its own tenant. */
export function requireTenantAccess(c: Context<AdminBindings>, tenantId: string): void {
  const principal = c.get("principal");
  if (principal.kind === "tenant" && principal.tenantId !== tenantId)
    throw permissionDenied("This key may only manage its own tenant");
}

/** A tenant admin may create, revoke and list only keys within its own scopes and projects. */
export function requireReach(c: Context<AdminBindings>, target: KeyReach, action: string): void {
  const principal = c.get("principal");
  if (principal.kind === "tenant" && !reachCovers(principal.reach, target)) {
    throw permissionDenied(
      `This key may not ${action} a key wider than itself (its scopes: ${principal.reach.scopes.join(", ")}; its projects: ${principal.reach.projects?.join(", ") ?? "all"})`,
      { scopes: principal.reach.scopes, projects: principal.reach.projects },
    );
  }
}

/** Tenant-wide figures need a key that reaches every project of the tenant. */
export function requireAllProjects(c: Context<AdminBindings>): void {
  const principal = c.get("principal");
  if (principal.kind === "tenant" && principal.reach.projects !== null)
    throw permissionDenied("Tenant-wide figures need an admin key that is not limited to projects");
}
