import { OAuthError, type TokenExchangeCallbackOptions } from "@cloudflare/workers-oauth-provider";
import { openControl } from "../control/control-db";
import { type AuthenticatedKey, findActiveKeyById } from "../control/tenants";
import { SCOPES, type Scope, scopeAllows } from "../core/tenants/api-keys";
import type { Env } from "../env";

/**
 * What a grant carries (the library encrypts it with the token): the tenant, the API key the person signed
 * in with (the OAuth "user", so revoking the key finds its grants), and the reach approved on the consent
 * page, never wider than the key's.
 */
export interface GrantProps {
  tenantId: string;
  keyId: string;
  scopes: Scope[];
  /** null = every project the key reaches. */
  projects: string[] | null;
}

/** Stored in clear beside the grant (listUserGrants shows it), for the admin API. */
export interface GrantMetadata extends GrantProps {
  clientName: string;
  redirectHost: string;
}

export function isGrantProps(value: unknown): value is GrantProps {
  const v = value as GrantProps | null;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof v.tenantId === "string" &&
    typeof v.keyId === "string" &&
    Array.isArray(v.scopes) &&
    v.scopes.every((s) => SCOPES.includes(s)) &&
    (v.projects === null || (Array.isArray(v.projects) && v.projects.every((p) => typeof p === "string")))
  );
}

/**
 * The caller an OAuth access token acts as: its key's identity (rate limit, usage log, last use) with the
 * token's scopes and the grant's projects, each cut down to what the key reaches now. Null when nothing is
 * left, which a key's own scopes and projects never change into, but a grant must not outlive a key's reach.
 */
export function tokenCaller(
  key: AuthenticatedKey,
  props: GrantProps,
  tokenScopes: readonly string[],
): AuthenticatedKey | null {
  if (props.tenantId !== key.tenantId || props.keyId !== key.keyId) return null;
  const scopes = SCOPES.filter(
    (s) => tokenScopes.includes(s) && props.scopes.includes(s) && scopeAllows(key.scopes, s),
  );
  const projects = narrowProjects(key.projects, props.projects);
  if (scopes.length === 0 || (projects !== null && projects.length === 0)) return null;
  return { ...key, scopes, projects };
}

function narrowProjects(keyProjects: string[] | null, grantProjects: string[] | null): string[] | null {
  if (keyProjects === null) return grantProjects;
  if (grantProjects === null) return keyProjects;
  return grantProjects.filter((p) => keyProjects.includes(p));
}

/**
 * Called by the token endpoint before it issues tokens for a code or a refresh token: a grant whose key has
 * been revoked gets nothing more. invalid_grant also makes the library delete the grant (the cleanup the
 * key's revocation may not have finished).
 */
export async function refuseRevokedKeys(options: TokenExchangeCallbackOptions<Env>): Promise<void> {
  const keyId = isGrantProps(options.props) ? options.props.keyId : options.userId;
  if (!(await findActiveKeyById(openControl(options.env.CONTROL), keyId))) {
    throw new OAuthError("invalid_grant", {
      description: "The API key this connection signed in with has been revoked",
    });
  }
}
