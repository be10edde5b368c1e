import { Hono, type MiddlewareHandler } from "hono";
import type { Env } from "../env";
import { DASHBOARD_HEADERS, dashboardPage } from "./page";

/** The files scripts/build-dashboard.mjs writes to assets/dashboard/, and their types. */
const ASSET_TYPES: Record<string, string> = {
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
};

const securityHeaders: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
  await next();
  for (const [name, value] of Object.entries(DASHBOARD_HEADERS)) c.res.headers.set(name, value);
};

/**
 * GET /dashboard: the page; GET /dashboard/assets/<file>: the bundle, read through the ASSETS binding.
 * Only the named bundle files are served, so nothing else under assets/ (the token tables) gets a URL.
 * The page talks to /jsonrpc and /admin with the key a person signs in with; it has no API of its own.
 */
export const dashboardRoutes = new Hono<{ Bindings: Env }>()
  .use("*", securityHeaders)
  .get("/", (c) => {
    c.header("cache-control", "no-store");
    return c.html(dashboardPage());
  })
  .get("/assets/:file", async (c) => {
    const file = c.req.param("file");
    const type = ASSET_TYPES[file];
    if (!type) return c.json({ error: { code: "NOT_FOUND", message: `No dashboard asset '${file}'` } }, 404);
    const asset = await c.env.ASSETS.fetch(`https://assets.invalid/dashboard/${file}`);
    if (!asset.ok)
      return c.json(
        {
          error: {
            code: "NOT_FOUND",
            message: `Dashboard asset '${file}' is missing: run node scripts/build-dashboard.mjs`,
          },
        },
        404,
      );
    // Fixed names: revalidate each load (the ETag makes that a 304), so a deploy is seen at once.
    return new Response(asset.body, { headers: { "content-type": type, "cache-control": "no-cache", ...etag(asset) } });
  });

function etag(response: Response): Record<string, string> {
  const value = response.headers.get("etag");
  return value ? { etag: value } : {};
}
