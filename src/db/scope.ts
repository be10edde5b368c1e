import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import type { UnitMeter } from "../billable-units";
import type { QuotaOverrides } from "../config";
import { meteredD1 } from "./metered-d1";
import * as schema from "./schema";

export type Database = DrizzleD1Database<typeof schema>;

const opened = new WeakMap<D1Database, Database>();

/** The drizzle database over a D1 binding, one per binding (building one walks the whole schema). */
export function openDatabase(d1: D1Database): Database {
  let db = opened.get(d1);
  if (!db) opened.set(d1, (db = drizzle(d1, { schema })));
  return db;
}

/**
 * A caller's view of storage: one tenant and, for a project-limited key, only its projects. Every
 * repository function takes one and filters on both (projectClause); only authentication creates a
 * scope, so no tool or domain call, by name or by id, can reach another tenant's or project's rows.
 */
export interface TenantScope {
  readonly tenantId: string;
  /** The projects the caller may read and write; null = every project of the tenant. */
  readonly projects: readonly string[] | null;
  readonly db: Database;
  /** Raw D1 for statements drizzle cannot express (FTS5 MATCH, vector blobs). */
  readonly d1: D1Database;
  /**
   * The operator's quota overrides for the tenant, as its route carried them (null: none, or not known to this
   * entry point); writes check them over the deployment's defaults (src/core/tenants/quotas.ts).
   */
  readonly quotas: QuotaOverrides | null;
}

export function tenantScope(
  d1: D1Database,
  tenantId: string,
  projects: readonly string[] | null = null,
  quotas: QuotaOverrides | null = null,
): TenantScope {
  return scopeOver(d1, tenantId, projects, quotas);
}

/** A scope whose drizzle database is opened at its first use (opening one builds the schema's relational config). */
function scopeOver(
  d1: D1Database,
  tenantId: string,
  projects: readonly string[] | null,
  quotas: QuotaOverrides | null,
): TenantScope {
  let db: Database | undefined;
  return {
    tenantId,
    projects,
    quotas,
    d1,
    get db() {
      return (db ??= openDatabase(d1));
    },
  };
}

/**
 * `IN` over a list bound as one JSON array: one parameter however long the list (D1 allows 100 a statement).
 * With no table statistics SQLite takes `tenant_id = ?` for the more selective term and walks every row of
 * the tenant, testing each against the list; a lookup by ids writes `+tenant_id = ?` (not an index term) so
 * it walks the primary key instead (test/job-reads.test.ts).
 */
export const IN_JSON = "IN (SELECT value FROM json_each(?))";

/**
 * ` AND <column> IN (...)` keeping rows to the scope's projects, with its one parameter;
 * empty for an unrestricted scope. `column` names a project column (items.project, conversations.project).
 */
export function projectClause(scope: TenantScope, column: string): { sql: string; params: string[] } {
  if (scope.projects === null) return { sql: "", params: [] };
  return { sql: ` AND ${column} ${IN_JSON}`, params: [JSON.stringify(scope.projects)] };
}

/** Whether the scope may touch a project. */
export function scopeAllowsProject(scope: TenantScope, project: string): boolean {
  return scope.projects === null || scope.projects.includes(project);
}

/** The same scope, its D1 statements charged to the meter (round trips, rows read and written). */
export function meteredScope(scope: TenantScope, meter: UnitMeter): TenantScope {
  return scopeOver(meteredD1(scope.d1, meter), scope.tenantId, scope.projects, scope.quotas);
}
