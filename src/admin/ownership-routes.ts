import { type Context, Hono } from "hono";
import { UnitMeter } from "../billable-units";
import { openControl } from "../control/control-db";
import { getTenant } from "../control/tenants";
import { exportStream } from "../core/ownership/export-records";
import { parseImport } from "../core/ownership/import-lines";
import { importRecords } from "../core/ownership/import-records";
import { IMPORT_FORMATS, type ImportFormat } from "../core/ownership/import-schemas";
import { AppError, invalidParameter, notFound, permissionDenied } from "../errors";
import { type OpenedTenant, openTenant, routeOf } from "../open-tenant";
import type { AdminBindings } from "./principal";

/** Largest import body: a Worker's request body may be 100 MB on Workers Paid; 50 MB of NDJSON is ~100k memories. */
export const IMPORT_MAX_BYTES = 50 * 1024 * 1024;

/**
 * Taking a tenant's data out and bringing it (or another memory server's) in: the operator for any
 * tenant, a tenant admin key for its own (a project-limited one: its projects only).
 */
export const ownershipRoutes = new Hono<AdminBindings>()
  .get("/tenants/:tenantId/export", async (c) => {
    const opened = await openFor(c, c.req.query("project"));
    const { scope, services } = opened;
    const project = c.req.query("project") ?? null;
    const originals = c.req.query("originals");
    if (originals !== undefined && originals !== "true" && originals !== "false")
      throw invalidParameter("originals", "originals must be true or false");
    const documents = { originals: services.originals, withOriginals: originals === "true" };
    const name = `${scope.tenantId}${project ? `-${project.replace(/[^A-Za-z0-9_-]/g, "_")}` : ""}.ndjson`;
    const logged = logRun(c, opened, "export");
    return new Response(whenRead(exportStream(scope, project, documents), logged), {
      headers: {
        "content-type": "application/x-ndjson; charset=utf-8",
        "content-disposition": `attachment; filename="${name}"`,
        "cache-control": "no-store",
      },
    });
  })
  .post("/tenants/:tenantId/import", async (c) => {
    const project = c.req.query("project");
    const { scope, services } = await openFor(c, project);
    const format = c.req.query("format");
    if (format !== undefined && !(IMPORT_FORMATS as readonly string[]).includes(format)) {
      throw invalidParameter("format", `format must be one of ${IMPORT_FORMATS.join(", ")} (or left out to detect it)`);
    }
    const declared = Number(c.req.header("content-length") ?? 0);
    if (declared > IMPORT_MAX_BYTES) throw tooLarge();
    const body = await c.req.text();
    if (body.length > IMPORT_MAX_BYTES) throw tooLarge();
    if (body.trim() === "") throw invalidParameter("body", "The import body is empty");
    const records = parseImport(body, format as ImportFormat | undefined);
    const logged = logRun(c, { scope, services }, "import");
    try {
      const result = await importRecords(scope, services, records, project);
      logged(false);
      return c.json(result, 200);
    } catch (error) {
      logged(true);
      throw error;
    }
  });

/**
 * What an export or import spent, logged as a job run of the tenant's (the usage log's jobs: these are no tool
 * calls) once it has ended, its stream read to the end or given up.
 */
function logRun(c: Context<AdminBindings>, { scope, services }: Pick<OpenedTenant, "scope" | "services">, job: string) {
  const startedAt = Date.now();
  let logged = false;
  return (failed: boolean) => {
    if (logged) return;
    logged = true;
    const send = async () => {
      await services.meter.settled();
      await services.usage.record(scope.tenantId, [], [{ job, startedAt, failed, units: services.meter.takeOwn() }]);
    };
    c.executionCtx.waitUntil(send().catch((error) => console.error(`usage log send for ${job} failed`, error)));
  };
}

/** The stream as is, calling `ended` once it was read to its end (false) or failed or was cancelled (true). */
function whenRead(stream: ReadableStream<Uint8Array>, ended: (failed: boolean) => void): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  return new ReadableStream({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (!next.done) return controller.enqueue(next.value);
        controller.close();
        ended(false);
      } catch (error) {
        ended(true);
        controller.error(error);
      }
    },
    cancel(reason) {
      ended(true);
      return reader.cancel(reason);
    },
  });
}

function tooLarge(): AppError {
  return invalidParameter("body", `An import body may hold at most ${IMPORT_MAX_BYTES} bytes; split the file`);
}

/** The tenant's storage as this caller may see it; 404 for a tenant that does not exist, 409 while it is being deleted. */
async function openFor(c: Context<AdminBindings>, project: string | undefined) {
  const tenantId = c.req.param("tenantId")!;
  if (project !== undefined && (project.length === 0 || project.length > 200)) {
    throw invalidParameter("project", `project must be 1 to 200 characters (got ${project.length})`);
  }
  const principal = c.get("principal");
  if (principal.kind === "tenant" && principal.tenantId !== tenantId)
    throw permissionDenied("This key may only manage its own tenant");
  const reach = principal.kind === "tenant" ? principal.reach.projects : null;
  if (project !== undefined && reach !== null && !reach.includes(project)) {
    throw permissionDenied(`This key may not reach project '${project}'; it is limited to: ${reach.join(", ")}`, {
      parameter: "project",
    });
  }
  const tenant = await getTenant(openControl(c.env.CONTROL), tenantId).catch(() => null);
  if (!tenant) throw notFound(`No tenant '${tenantId}'`, { tenant_id: tenantId });
  if (tenant.deleting_since)
    throw new AppError("CONFLICT", `Tenant '${tenantId}' is being deleted`, { tenant_id: tenantId });
  // A meter of its own: the export or import is logged as the tenant's job, apart from the admin request around it.
  return openTenant(c.env, routeOf(tenant), (p) => c.executionCtx.waitUntil(p), {
    projects: reach,
    quotas: tenant.quota_overrides ?? null,
    meter: new UnitMeter(),
  });
}
