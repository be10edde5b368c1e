import { projectClause, type TenantScope } from "../../db/scope";

/** Rows per read. */
export const PAGE = 500;

export type ExportLine = Record<string, unknown> & { type: string };

/** ` AND <column> ...`: rows the scope may see and, for an export of one project, of that project only. */
export function exportedProjects(
  scope: TenantScope,
  project: string | null,
  column: string,
): { sql: string; params: unknown[] } {
  const own = projectClause(scope, column);
  return project === null ? own : { sql: `${own.sql} AND ${column} = ?`, params: [...own.params, project] };
}

/**
 * Rows page by page by their key (keyset: each page starts after the key of the last row of the one before): `id`
 * unless `keyOf` says which columns, in the order the page's statement sorts by them.
 */
export async function* paged(
  type: string,
  page: (after: unknown[] | null) => D1PreparedStatement,
  shape: (row: Record<string, unknown>) => Record<string, unknown> = (row) => row,
  keyOf: (row: Record<string, unknown>) => unknown[] = (row) => [row.id],
): AsyncGenerator<ExportLine> {
  let after: unknown[] | null = null;
  for (;;) {
    const { results } = await page(after).all<Record<string, unknown>>();
    for (const row of results) yield { type, ...shape(row) };
    if (results.length < PAGE) return;
    after = keyOf(results[results.length - 1]!);
  }
}
