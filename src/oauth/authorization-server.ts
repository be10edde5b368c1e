import { OAuthAuthorizationServer } from "@cloudflare/workers-oauth-provider";
import type { Env } from "../env";
import { refuseRevokedKeys } from "./grant-props";
import { ensureOAuthFetchPolicy } from "./outbound-policy";

/**
 * The OAuth 2.1 authorization server (@cloudflare/workers-oauth-provider) in this Worker. Its one protected
 * resource is `/mcp`. The issuer is the origin the request came in on: a Worker answers on workers.dev, on
 * custom domains and on localhost alike, and each origin is its own issuer with its own resource, so a
 * token issued for one is refused at another (RFC 8707 audience).
 */

export const MCP_PATH = "/mcp";
/** The key-only MCP URL: no OAuth discovery, no OAuth tokens (for clients that drop headers once they see OAuth). */
export const KEY_ONLY_MCP_PATH = "/mcp-key";
export const AUTHORIZE_PATH = "/oauth/authorize";
export const TOKEN_PATH = "/oauth/token";
export const REGISTER_PATH = "/oauth/register";
export const PROTECTED_RESOURCE_METADATA_PATH = `/.well-known/oauth-protected-resource${MCP_PATH}`;

/** What a grant may carry: the tool scopes. `admin` stays with API keys (tokens never reach /admin). */
export const OAUTH_SCOPES = ["read", "write"] as const;
export type OAuthScope = (typeof OAUTH_SCOPES)[number];

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
/** A grant lives 30 days past its last refresh (sliding), so a connector in use never has to sign in again. */
export const REFRESH_TOKEN_IDLE_TTL_SECONDS = 30 * 24 * 3600;

const servers = new Map<string, OAuthAuthorizationServer<Env> | null>();

/**
 * The authorization server for the request's origin, or null when the origin cannot be an issuer: OAuth
 * needs https, or http on a loopback host (wrangler dev).
 */
export function authorizationServerFor(requestUrl: string | URL): OAuthAuthorizationServer<Env> | null {
  // The library fetches CIMD documents with the global fetch: no redirects, public hosts only (outbound-policy.ts).
  ensureOAuthFetchPolicy();
  const origin = new URL(requestUrl).origin;
  if (!servers.has(origin)) {
    if (servers.size >= 32) servers.clear(); // a Worker has a handful of hostnames; keep the map bounded anyway
    servers.set(origin, buildServer(origin));
  }
  return servers.get(origin)!;
}

function buildServer(origin: string): OAuthAuthorizationServer<Env> | null {
  try {
    return new OAuthAuthorizationServer<Env>({
      issuer: origin,
      resources: [origin + MCP_PATH],
      authorizeEndpoint: AUTHORIZE_PATH,
      tokenEndpoint: TOKEN_PATH,
      clientRegistrationEndpoint: REGISTER_PATH,
      scopesSupported: [...OAUTH_SCOPES],
      accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTTL: REFRESH_TOKEN_IDLE_TTL_SECONDS,
      refreshTokenIdleTTL: REFRESH_TOKEN_IDLE_TTL_SECONDS,
      clientIdMetadataDocumentEnabled: true,
      tokenExchangeCallback: refuseRevokedKeys,
    });
  } catch {
    // The library refuses a non-loopback http issuer; such an origin simply offers no OAuth.
    return null;
  }
}

export function mcpResource(requestUrl: string | URL): string {
  return new URL(requestUrl).origin + MCP_PATH;
}

/** RFC 9728 metadata for /mcp: where to get a token and which scopes to ask for. */
export function protectedResourceMetadata(requestUrl: string | URL) {
  const origin = new URL(requestUrl).origin;
  return {
    resource: origin + MCP_PATH,
    authorization_servers: [origin],
    scopes_supported: [...OAUTH_SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: "Context Edge",
  };
}

/**
 * The 401 challenge on /mcp (RFC 6750, RFC 9728 §5.1): it names the metadata a client discovers OAuth from,
 * on an origin that can offer OAuth.
 */
export function oauthChallenge(requestUrl: string | URL, error?: { code: string; description: string }): string {
  const metadataUrl = new URL(requestUrl).origin + PROTECTED_RESOURCE_METADATA_PATH;
  const parts = [`realm="context-edge"`];
  if (authorizationServerFor(requestUrl))
    parts.push(`resource_metadata="${metadataUrl}"`, `scope="${OAUTH_SCOPES.join(" ")}"`);
  if (error) parts.push(`error="${error.code}"`, `error_description="${error.description}"`);
  return `Bearer ${parts.join(", ")}`;
}
