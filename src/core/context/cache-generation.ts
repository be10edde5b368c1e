import type { TenantScope } from "../../db/scope";

/** The cache key for contexts built across every project the caller may read. */
export const ALL_PROJECTS = "*";

/**
 * Statements that invalidate cached contexts of the given projects (and of cross-project contexts).
 * Callers put them in the same D1 batch as the write, so no cached answer outlives a write.
 */
export function bumpCacheGenerations(scope: TenantScope, projects: Iterable<string>): D1PreparedStatement[] {
  const statement = scope.d1.prepare(
    "INSERT INTO cache_generations (tenant_id, project, generation) VALUES (?, ?, 1) ON CONFLICT (tenant_id, project) DO UPDATE SET generation = generation + 1",
  );
  return [...new Set([...projects, ALL_PROJECTS])].map((project) => statement.bind(scope.tenantId, project));
}
