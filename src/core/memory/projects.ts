import type { TenantScope } from "../../db/scope";

/** Projects that hold at least one item (any tier), sorted; limited to `allowed` when given. */
export async function listProjects(scope: TenantScope, allowed: readonly string[] | null): Promise<string[]> {
  const { results } = await scope.d1
    .prepare("SELECT DISTINCT project FROM items WHERE tenant_id = ? ORDER BY project")
    .bind(scope.tenantId)
    .all<{ project: string }>();
  const projects = results.map((r) => r.project);
  return allowed === null ? projects : projects.filter((p) => allowed.includes(p));
}
