import { type Context, Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { adminRoutes } from "./admin/admin-routes";
import { rateLimit, requireApiKey, requireKeyOrAccessToken, toolCallChargers } from "./auth/middleware";
import { meterRequest } from "./auth/request-usage";
import { readConfig } from "./config";
import { dashboardRoutes } from "./dashboard/routes";
import { type AppError, toAppError } from "./errors";
import type { AppBindings } from "./http/context";
import { documentBodyLimit, uploadDocument } from "./http/document-upload";
import { jsonRpcErrorBody } from "./http/responses";
import { handleJsonRpc, JSON_RPC } from "./mcp/jsonrpc-endpoint";
import { handleMcpPost, SERVER_INFO } from "./mcp/mcp-endpoint";
import { KEY_ONLY_MCP_PATH, MCP_PATH } from "./oauth/authorization-server";
import { oauthRoutes } from "./oauth/routes";
import type { ToolContext } from "./tools/define-tool";
import { TOOLS } from "./tools/index";
import { parseToolsets, type Toolset } from "./tools/toolsets";

export const app = new Hono<AppBindings>();

// Before any route: every binding a request reaches charges what it spends (docs/costs.md).
app.use("*", meterRequest);

app.get("/health", (c) =>
  c.json({ status: "ok", name: SERVER_INFO.name, version: SERVER_INFO.version, time: new Date().toISOString() }),
);

/** The spec asks servers to validate Origin (DNS rebinding): same host or ALLOWED_ORIGINS only. */
const validateOrigin: MiddlewareHandler<AppBindings> = async (c, next) => {
  const origin = c.req.header("origin");
  if (origin && !originAllowed(origin, c.req.url, readConfig(c.env).allowedOrigins)) {
    return c.json(jsonRpcErrorBody(-32000, `Origin '${origin}' is not allowed; add it to ALLOWED_ORIGINS`), 403);
  }
  await next();
};

const corsForAllowedOrigins = cors({
  origin: (origin, c) => (originAllowed(origin, c.req.url, readConfig(c.env).allowedOrigins) ? origin : null),
  // mcp-method and mcp-name: the standard request headers of MCP 2026-07-28.
  allowHeaders: [
    "authorization",
    "x-api-key",
    "content-type",
    "accept",
    "mcp-protocol-version",
    "mcp-session-id",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "x-d1-bookmark",
  ],
  exposeHeaders: ["mcp-session-id", "mcp-protocol-version", "www-authenticate", "retry-after", "x-d1-bookmark"],
  allowMethods: ["POST", "GET", "DELETE", "OPTIONS"],
});

const limitBody: MiddlewareHandler<AppBindings> = (c, next) => {
  const maxSize = readConfig(c.env).maxBodyBytes;
  return bodyLimit({
    maxSize,
    onError: (c) =>
      c.json(jsonRpcErrorBody(-32600, `Request body exceeds the ${maxSize}-byte limit (MAX_BODY_BYTES)`), 413),
  })(c, next);
};

// /mcp takes an API key or an OAuth access token (Claude.ai, ChatGPT); /mcp-key and /jsonrpc take keys only and
// advertise no OAuth, for clients that stop sending a configured header once a server offers OAuth.
const authFor = { [MCP_PATH]: requireKeyOrAccessToken, [KEY_ONLY_MCP_PATH]: requireApiKey, "/jsonrpc": requireApiKey };
for (const [path, authenticate] of Object.entries(authFor)) {
  app.use(path, corsForAllowedOrigins, validateOrigin);
  app.on(["POST", "GET", "DELETE"], path, authenticate, rateLimit);
  app.post(path, limitBody);
}

for (const path of [MCP_PATH, KEY_ONLY_MCP_PATH]) {
  app.post(path, async (c) => {
    const toolset = resolveToolset(c, "core");
    if (toolset instanceof Response) return toolset;
    return handleMcpPost(c.req.raw, toolset, toolContext(c));
  });

  /** Stateless server: no standalone SSE stream and no sessions to end (spec: 405). */
  app.on(["GET", "DELETE"], path, (c) => {
    c.header("Allow", "POST");
    return c.json(
      jsonRpcErrorBody(-32000, "Method not allowed: this server is stateless; send JSON-RPC messages with POST"),
      405,
    );
  });
}

app.post("/jsonrpc", async (c) => {
  const toolset = resolveToolset(c, "all");
  if (toolset instanceof Response) return toolset;
  const answer = await handleJsonRpc(await c.req.text(), toolset, toolContext(c));
  if (!answer) return c.body(null, 204);
  return c.json(answer.payload, answer.status as 200 | 400);
});

// A document as a file (POST /documents, http/document-upload.ts): keys only, with the documents' own body limit.
app.use("/documents", corsForAllowedOrigins, validateOrigin);
app.post("/documents", requireApiKey, rateLimit, documentBodyLimit, (c) => uploadDocument(c, toolContext(c)));

app.route("/admin", adminRoutes);
app.route("/dashboard", dashboardRoutes);
app.route("/", oauthRoutes);

app.notFound((c) =>
  c.json({ error: { code: "NOT_FOUND", message: `No route for ${c.req.method} ${new URL(c.req.url).pathname}` } }, 404),
);

app.onError((error, c) => {
  const appError = toAppError(error);
  if (appError.code === "UNAVAILABLE") {
    c.header("Retry-After", String(appError.details.retry_after_seconds));
    return c.json(jsonRpcErrorBody(JSON_RPC.SERVER, appError.message, appError.toJSON().error), 503);
  }
  return c.json(jsonRpcErrorBody(JSON_RPC.INTERNAL, appError.message), 500);
});

function resolveToolset(c: Context<AppBindings>, fallback: string): Toolset | Response {
  try {
    return parseToolsets(c.req.query("toolsets"), fallback);
  } catch (error) {
    const e = error as AppError;
    return c.json(jsonRpcErrorBody(JSON_RPC.INVALID_PARAMS, e.message, e.toJSON().error), 400);
  }
}

function toolContext(c: Context<AppBindings>): ToolContext {
  const charger = toolCallChargers(c.env, c.get("caller"));
  return {
    scope: c.get("scope"),
    caller: c.get("caller"),
    services: c.get("services"),
    catalog: TOOLS,
    chargeToolCall: charger.charge,
    reserveToolCalls: charger.reserve,
  };
}

function originAllowed(origin: string, requestUrl: string, allowed: string[]): boolean {
  // CORS asks about every request, "" when it has no Origin (most agents): an empty one is not a URL, and the thrown
  // error would cost a request more than the rest of this check.
  if (!origin) return false;
  if (allowed.includes("*") || allowed.includes(origin)) return true;
  try {
    return new URL(origin).host === new URL(requestUrl).host;
  } catch {
    return false;
  }
}
