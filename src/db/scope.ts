import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Database = DrizzleD1Database<typeof schema>;

export function openDatabase(d1: D1Database): Database {
  return drizzle(d1, { schema });
}

/**
 * A tenant's view of storage. Every repository function takes one and filters on its tenantId;
 * only authentication creates a scope, so no tool or domain call can reach another tenant's rows.
 */
export interface TenantScope {
  readonly tenantId: string;
  readonly db: Database;
  /** Raw D1 for statements drizzle cannot express (FTS5 MATCH, vector blobs). */
  readonly d1: D1Database;
}

export function tenantScope(d1: D1Database, tenantId: string): TenantScope {
  return { tenantId, db: openDatabase(d1), d1 };
}
