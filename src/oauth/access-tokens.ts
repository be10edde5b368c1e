import { routeKeyById } from "../control/routing";
import type { AuthenticatedKey } from "../control/tenants";
import type { Env } from "../env";
import { authorizationServerFor, mcpResource } from "./authorization-server";
import { isGrantProps, tokenCaller } from "./grant-props";

/**
 * An OAuth access token presented at /mcp -> the caller it acts as, or null (401). The library checks the
 * token (hash, expiry, audience = this origin's /mcp); the key it was granted through is then read from the
 * control database (through the isolate's routing cache, ROUTE_TTL_MS), so a revoked key stops its tokens
 * within that bound even if removing its grants from KV failed or has not reached every location yet (KV is
 * eventually consistent for ~60 s).
 */
export async function callerForAccessToken(
  env: Env,
  requestUrl: string,
  token: string,
): Promise<AuthenticatedKey | null> {
  const server = authorizationServerFor(requestUrl);
  if (!server) return null;
  const validated = await server.validateToken(mcpResource(requestUrl), token, env);
  if (!validated || !isGrantProps(validated.props) || validated.userId !== validated.props.keyId) return null;
  const key = await routeKeyById(env.CONTROL, validated.props.keyId);
  return key ? tokenCaller(key, validated.props, validated.scope) : null;
}
