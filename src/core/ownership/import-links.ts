import { projectClause, type TenantScope } from "../../db/scope";
import type { LinkRecord } from "./import-schemas";

/**
 * The file's links, each written only where both its ends are in the tenant and the caller's projects (an end the
 * import did not write, or may not reach, leaves the link out); a link already there is left as it is.
 */
export function linkStatements(
  scope: TenantScope,
  links: readonly LinkRecord[],
  newId: (id: string) => string,
): D1PreparedStatement[] {
  return links.map((l) => {
    const end = (type: string, id: string) => linkEnd(scope, type, id, newId);
    const source = end(l.source_type, l.source_id);
    const target = end(l.target_type, l.target_id);
    return scope.d1
      .prepare(
        `INSERT OR IGNORE INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, metadata, created_at)
         SELECT ?, ?, ?, ${source.sql}, ?, ${target.sql}, ?, ?, ?, ? WHERE ${source.sql} IS NOT NULL AND ${target.sql} IS NOT NULL`,
      )
      .bind(
        newId(l.id),
        scope.tenantId,
        l.source_type,
        ...source.params,
        l.target_type,
        ...target.params,
        l.relationship_type,
        l.weight,
        JSON.stringify(l.metadata),
        l.created_at,
        ...source.params,
        ...target.params,
      );
  });
}

/** A link end as SQL: an item id remapped, a conversation id as is, a chunk ("<item id>#<index>") looked up. */
function linkEnd(
  scope: TenantScope,
  type: string,
  id: string,
  newId: (id: string) => string,
): { sql: string; params: unknown[] } {
  // Each end must exist in the tenant and lie in the caller's projects (a project-limited key links only there).
  const item = projectClause(scope, "i.project");
  if (type === "conversation") {
    const own = projectClause(scope, "c.project");
    return {
      sql: `(SELECT c.id FROM conversations c WHERE c.tenant_id = ? AND c.id = ?${own.sql})`,
      params: [scope.tenantId, id, ...own.params],
    };
  }
  if (type === "chunk") {
    const at = id.lastIndexOf("#");
    return {
      sql: `(SELECT CAST(c.id AS TEXT) FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.tenant_id = ? AND c.item_id = ? AND c.chunk_index = ?${item.sql})`,
      params: [scope.tenantId, newId(id.slice(0, at)), Number(id.slice(at + 1)), ...item.params],
    };
  }
  return {
    sql: `(SELECT i.id FROM items i WHERE i.tenant_id = ? AND i.id = ?${item.sql})`,
    params: [scope.tenantId, newId(id), ...item.params],
  };
}
