import type { GrantSummary, OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import type { Env } from "../env";
import { authorizationServerFor } from "./authorization-server";
import type { GrantMetadata } from "./grant-props";

/** A grant as the admin API shows it (no token, no secret). */
export interface GrantInfo {
  grant_id: string;
  key_id: string;
  tenant_id: string;
  client_id: string;
  client_name: string;
  redirect_host: string;
  scopes: string[];
  projects: string[] | null;
  resource: string | null;
  created_at: string;
  expires_at: string | null;
}

/**
 * The library's grant helpers. Grants are stored by user (= key id) whatever the issuer, so any origin's
 * server reaches them; an origin that cannot be an issuer (plain http) borrows the loopback one.
 */
function grantHelpers(env: Env, requestUrl: string): OAuthHelpers {
  return (authorizationServerFor(requestUrl) ?? authorizationServerFor("http://localhost"))!.getOAuthApi(env);
}

export async function grantsOfKey(env: Env, requestUrl: string, keyId: string): Promise<GrantInfo[]> {
  const oauth = grantHelpers(env, requestUrl);
  const grants: GrantInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await oauth.listUserGrants(keyId, cursor ? { cursor } : undefined);
    grants.push(...page.items.map(toGrantInfo));
    cursor = page.cursor;
  } while (cursor);
  return grants.sort((a, b) => b.created_at.localeCompare(a.created_at));
}

export async function revokeGrant(env: Env, requestUrl: string, keyId: string, grantId: string): Promise<void> {
  await grantHelpers(env, requestUrl).revokeGrant(grantId, keyId);
}

/**
 * Revoking a key revokes its grants and their tokens. If this fails part way, the tokens still stop
 * working: every request checks that the key is active (src/oauth/access-tokens.ts). Returns how many
 * grants were removed, or null when the cleanup failed.
 */
export async function revokeGrantsOfKey(env: Env, requestUrl: string, keyId: string): Promise<number | null> {
  try {
    const grants = await grantsOfKey(env, requestUrl, keyId);
    await Promise.all(grants.map((g) => revokeGrant(env, requestUrl, keyId, g.grant_id)));
    return grants.length;
  } catch (error) {
    console.error(`Revoking the OAuth grants of key ${keyId} failed; its tokens are refused anyway`, error);
    return null;
  }
}

/**
 * Tenant deletion: every grant of these keys goes. Unlike revokeGrantsOfKey it throws when one cannot be
 * removed, so the deletion step is retried before the keys' rows (which name the grants' owner) are gone.
 */
export async function deleteGrantsOfKeys(env: Env, keyIds: readonly string[]): Promise<void> {
  const origin = "http://localhost"; // grants are stored by key id whatever the issuer
  for (const keyId of keyIds) {
    const grants = await grantsOfKey(env, origin, keyId);
    await Promise.all(grants.map((g) => revokeGrant(env, origin, keyId, g.grant_id)));
  }
}

function toGrantInfo(grant: GrantSummary): GrantInfo {
  const meta = (grant.metadata ?? {}) as Partial<GrantMetadata>;
  return {
    grant_id: grant.id,
    key_id: grant.userId,
    tenant_id: meta.tenantId ?? "",
    client_id: grant.clientId,
    client_name: meta.clientName ?? grant.clientId,
    redirect_host: meta.redirectHost ?? (grant.redirectUri ? new URL(grant.redirectUri).hostname : ""),
    scopes: grant.scope,
    projects: meta.projects ?? null,
    resource: typeof grant.resource === "string" ? grant.resource : (grant.resource?.[0] ?? null),
    created_at: new Date(grant.createdAt * 1000).toISOString(),
    expires_at: grant.expiresAt === undefined ? null : new Date(grant.expiresAt * 1000).toISOString(),
  };
}
