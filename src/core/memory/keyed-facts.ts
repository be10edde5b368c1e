import { projectClause, type TenantScope } from "../../db/scope";
import { notFound } from "../../errors";

/**
 * Keyed facts: a memory stored with a key (user.city) supersedes the project's current memory of that
 * key (see writeItems). The superseded items stay, tier 'superseded', out of search and context; these
 * reads find the current one and the whole history.
 */

export interface FactVersion {
  id: string;
  content: string;
  createdAt: number;
  /** null for the current version. */
  supersededBy: string | null;
}

/** The current item of a key in a project; NOT_FOUND when the key was never stored there (or the scope cannot see it). */
export async function currentItemOfKey(scope: TenantScope, project: string, key: string): Promise<string> {
  const visible = projectClause(scope, "project");
  const row = await scope.d1
    .prepare(
      `SELECT id FROM items WHERE tenant_id = ? AND project = ? AND key = ? AND tier <> 'superseded'${visible.sql} ORDER BY created_at DESC LIMIT 1`,
    )
    .bind(scope.tenantId, project, key, ...visible.params)
    .first<{ id: string }>();
  if (!row)
    throw notFound(`No memory with key '${key}' in namespace '${project}'`, {
      parameter: "key",
      key,
      namespace: project,
    });
  return row.id;
}

/** Every version of a key in a project, newest first (the current one first). */
export async function keyHistory(scope: TenantScope, project: string, key: string): Promise<FactVersion[]> {
  const visible = projectClause(scope, "project");
  const { results } = await scope.d1
    .prepare(
      `SELECT id, content, created_at, superseded_by FROM items WHERE tenant_id = ? AND project = ? AND key = ?${visible.sql}
       ORDER BY superseded_by IS NOT NULL, created_at DESC, rowid DESC`,
    )
    .bind(scope.tenantId, project, key, ...visible.params)
    .all<{ id: string; content: string; created_at: number; superseded_by: string | null }>();
  return results.map((r) => ({ id: r.id, content: r.content, createdAt: r.created_at, supersededBy: r.superseded_by }));
}
