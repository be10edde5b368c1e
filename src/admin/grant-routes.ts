import { type Context, Hono } from "hono";
import { openControl } from "../control/control-db";
import { getApiKey, listApiKeys } from "../control/tenants";
import { reachCovers, SCOPES, type Scope } from "../core/tenants/api-keys";
import { notFound, permissionDenied } from "../errors";
import { type GrantInfo, grantsOfKey, revokeGrant } from "../oauth/key-grants";
import type { AdminBindings } from "./principal";

/**
 * The admin API for OAuth grants (mounted under /admin, behind its authentication). A tenant admin sees and
 * revokes only its own tenant's grants, and only those within its own reach, as with keys.
 */
export const grantAdminRoutes = new Hono<AdminBindings>()
  .get("/tenants/:tenantId/grants", async (c) => {
    const tenantId = c.req.param("tenantId");
    const principal = c.get("principal");
    if (principal.kind === "tenant" && principal.tenantId !== tenantId)
      throw permissionDenied("This key may only manage its own tenant");
    const keys = (await listApiKeys(openControl(c.env.CONTROL), tenantId)).filter((k) => k.revoked_at === null);
    const grants = (await Promise.all(keys.map((k) => grantsOfKey(c.env, c.req.url, k.key_id)))).flat();
    return c.json({
      grants: grants.filter((g) => withinReach(c, g)).sort((a, b) => b.created_at.localeCompare(a.created_at)),
    });
  })
  .delete("/keys/:keyId/grants/:grantId", async (c) => {
    const { keyId, grantId } = c.req.param();
    const principal = c.get("principal");
    await getApiKey(openControl(c.env.CONTROL), keyId, principal.kind === "tenant" ? principal.tenantId : null); // NOT_FOUND outside the tenant
    const grant = (await grantsOfKey(c.env, c.req.url, keyId)).find((g) => g.grant_id === grantId);
    if (!grant)
      throw notFound(`OAuth grant '${grantId}' of key '${keyId}' does not exist`, { key_id: keyId, grant_id: grantId });
    if (!withinReach(c, grant)) throw permissionDenied("This key may not revoke a grant wider than itself");
    await revokeGrant(c.env, c.req.url, keyId, grantId);
    return c.json({ ...grant, revoked: true });
  });

function withinReach(c: Context<AdminBindings>, grant: GrantInfo): boolean {
  const principal = c.get("principal");
  if (principal.kind === "operator") return true;
  const scopes = grant.scopes.filter((s): s is Scope => SCOPES.includes(s as Scope));
  return reachCovers(principal.reach, { scopes, projects: grant.projects });
}
