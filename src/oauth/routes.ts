import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Env } from "../env";
import {
  AUTHORIZE_PATH,
  authorizationServerFor,
  PROTECTED_RESOURCE_METADATA_PATH,
  protectedResourceMetadata,
  REGISTER_PATH,
  TOKEN_PATH,
} from "./authorization-server";
import { showConsent, submitConsent } from "./consent";

/**
 * OAuth discovery and endpoints. The library serves RFC 8414 metadata, the token endpoint (code and refresh
 * grants, RFC 7009 revocation) and dynamic client registration (RFC 7591); this app serves the RFC 9728
 * metadata of /mcp and the consent page.
 */
export const oauthRoutes = new Hono<{ Bindings: Env }>();

/** Token and registration bodies are a few hundred bytes; refuse big ones before the library parses them. */
const OAUTH_BODY_LIMIT = 64 * 1024;
const limitOAuthBody = bodyLimit({
  maxSize: OAUTH_BODY_LIMIT,
  onError: (c) =>
    c.json({ error: "invalid_request", error_description: `Request body exceeds ${OAUTH_BODY_LIMIT} bytes` }, 413),
});

const PUBLIC_CORS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
  "Access-Control-Allow-Headers": "mcp-protocol-version",
};

oauthRoutes.on(["GET", "HEAD"], PROTECTED_RESOURCE_METADATA_PATH, (c) => {
  if (!authorizationServerFor(c.req.url))
    return c.json(
      { error: "invalid_request", error_description: "OAuth needs https (or http on localhost)" },
      404,
      PUBLIC_CORS,
    );
  return c.json(protectedResourceMetadata(c.req.url), 200, { ...PUBLIC_CORS, "Cache-Control": "public, max-age=3600" });
});
oauthRoutes.options(PROTECTED_RESOURCE_METADATA_PATH, () => new Response(null, { status: 204, headers: PUBLIC_CORS }));

const delegate = (c: Context<{ Bindings: Env }>) => {
  const server = authorizationServerFor(c.req.url);
  if (!server)
    return c.json({ error: "invalid_request", error_description: "OAuth needs https (or http on localhost)" }, 404);
  // Hono types its own narrower ExecutionContext; at run time it is the Worker's.
  return server.fetch(c.req.raw, c.env, c.executionCtx as unknown as ExecutionContext);
};

oauthRoutes.all("/.well-known/oauth-authorization-server", delegate);
oauthRoutes.post(TOKEN_PATH, limitOAuthBody, delegate);
oauthRoutes.post(REGISTER_PATH, limitOAuthBody, delegate);
oauthRoutes.options(TOKEN_PATH, delegate);
oauthRoutes.options(REGISTER_PATH, delegate);

oauthRoutes.get(AUTHORIZE_PATH, showConsent);
oauthRoutes.post(
  AUTHORIZE_PATH,
  bodyLimit({ maxSize: OAUTH_BODY_LIMIT, onError: (c) => c.text("Form too large", 413) }),
  submitConsent,
);
