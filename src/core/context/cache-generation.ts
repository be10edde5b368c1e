import type { TenantScope } from "../../db/scope";

/** The cache key for contexts built across every project the caller may read. */
export const ALL_PROJECTS = "*";

/**
 * Statements that invalidate cached contexts of the given projects, and so of cross-project contexts, whose
 * generation is the sum of the tenant's (currentGeneration): a write bumps its own projects' rows only.
 * Callers put them in the same D1 batch as the write, so no cached answer outlives a write.
 */
export function bumpCacheGenerations(scope: TenantScope, projects: Iterable<string>): D1PreparedStatement[] {
  const statement = scope.d1.prepare(
    "INSERT INTO cache_generations (tenant_id, project, generation) VALUES (?, ?, 1) ON CONFLICT (tenant_id, project) DO UPDATE SET generation = generation + 1",
  );
  return [...new Set(projects)].map((project) => statement.bind(scope.tenantId, project));
}

/**
 * SQL for a project's current generation, given SQL for the tenant and the project. Cross-project contexts
 * (ALL_PROJECTS) take the sum of every row of the tenant, theirs included: it grows with any project's write, and a
 * deleted project's count moves to their row (retireProjectGeneration), so the sum never returns to a value it had.
 */
export function currentGeneration(tenant: string, project: string): string {
  return `COALESCE(CASE WHEN ${project} = '${ALL_PROJECTS}'
    THEN (SELECT SUM(generation) FROM cache_generations WHERE tenant_id = ${tenant})
    ELSE (SELECT generation FROM cache_generations WHERE tenant_id = ${tenant} AND project = ${project}) END, 0)`;
}

/** A deleted project's generation row removed, its count (and one more) added to the cross-project row in the same batch. */
export function retireProjectGeneration(d1: D1Database, tenantId: string, project: string): D1PreparedStatement[] {
  return [
    d1
      .prepare(
        `INSERT INTO cache_generations (tenant_id, project, generation)
         VALUES (?1, '${ALL_PROJECTS}', 1 + COALESCE((SELECT generation FROM cache_generations WHERE tenant_id = ?1 AND project = ?2), 0))
         ON CONFLICT (tenant_id, project) DO UPDATE SET generation = generation + excluded.generation`,
      )
      .bind(tenantId, project),
    d1.prepare("DELETE FROM cache_generations WHERE tenant_id = ? AND project = ?").bind(tenantId, project),
  ];
}

/**
 * Statements that record a new or strengthened link touching these items: the tenant's link clock
 * moves on and each item is marked with it. Only cached contexts that followed one of these items'
 * links are dropped (semantic-cache.ts), so background linking leaves the rest of a project's cache
 * alone. Run in the link write's batch or after it, never before: a context built in between then
 * carries an older clock and is dropped, never served stale.
 */
export function markLinkChanges(scope: TenantScope, itemIds: Iterable<string>): D1PreparedStatement[] {
  const ids = [...new Set(itemIds)];
  if (ids.length === 0) return [];
  const marks = scope.d1.prepare(
    `INSERT INTO cache_link_marks (tenant_id, item_id, project, seq)
     SELECT ?1, i.id, i.project, (SELECT seq FROM cache_link_clock WHERE tenant_id = ?1) FROM items i WHERE +i.tenant_id = ?1 AND i.id IN (SELECT value FROM json_each(?2))
     ON CONFLICT (tenant_id, item_id) DO UPDATE SET seq = excluded.seq`,
  );
  const statements = [
    scope.d1
      .prepare(
        "INSERT INTO cache_link_clock (tenant_id, seq) VALUES (?, 1) ON CONFLICT (tenant_id) DO UPDATE SET seq = seq + 1",
      )
      .bind(scope.tenantId),
  ];
  for (let i = 0; i < ids.length; i += MARKS_PER_STATEMENT)
    statements.push(marks.bind(scope.tenantId, JSON.stringify(ids.slice(i, i + MARKS_PER_STATEMENT))));
  return statements;
}

/**
 * Item ids per marking statement (one JSON parameter): D1 refuses a bound value over 2 MB, and a merged link job
 * over a large tenant of near-duplicates may mark more items than one such value holds.
 */
export const MARKS_PER_STATEMENT = 10_000;
