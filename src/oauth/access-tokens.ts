import type { AuthenticatedKey } from "../core/tenants/tenants";
import { openDatabase } from "../db/scope";
import type { Env } from "../env";
import { authorizationServerFor, mcpResource } from "./authorization-server";
import { findActiveKeyById } from "../core/tenants/tenants";
import { isGrantProps, tokenCaller } from "./grant-props";

/**
 * An OAuth access token presented at /mcp -> the caller it acts as, or null (401). The library checks the
 * token (hash, expiry, audience = this origin's /mcp); the key it was granted through is then read from D1
 * on every request, so a revoked key stops its tokens at once even if removing its grants from KV failed
 * or has not reached every location yet (KV is eventually consistent; D1 is not).
 */
export async function callerForAccessToken(env: Env, requestUrl: string, token: string): Promise<AuthenticatedKey | null> {
  const server = authorizationServerFor(requestUrl);
  if (!server) return null;
  const validated = await server.validateToken(mcpResource(requestUrl), token, env);
  if (!validated || !isGrantProps(validated.props) || validated.userId !== validated.props.keyId) return null;
  const key = await findActiveKeyById(openDatabase(env.DB), validated.props.keyId);
  return key ? tokenCaller(key, validated.props, validated.scope) : null;
}

