import { dot } from "../shared/vector-math";
import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { SEARCH_ROW_COLUMNS, searchFilterSql, searchedProjects, type SearchFilters, type SearchRow } from "./search-rows";

/** Search's vector part (search.ts): the vector list and its rows, and the cosines of hits it did not hold. */

/** The vector list; `complete` when the index returned fewer than asked, i.e. every embedded chunk. */
export async function vectorCandidates(
  scope: TenantScope,
  services: Services,
  embedQuery: () => Promise<Float32Array | null>,
  filters: SearchFilters,
  pool: number,
): Promise<{ rows: { row: SearchRow; similarity: number }[]; complete: boolean }> {
  const queryVector = await embedQuery();
  if (!queryVector) return { rows: [], complete: true };
  const projects = searchedProjects(scope, filters);
  const matches = await services.vectors.query(scope.tenantId, queryVector, { topK: pool, projects: projects === null ? undefined : [...projects] });
  const complete = matches.length < pool;
  if (matches.length === 0) return { rows: [], complete };
  const rows = await rowsByChunkIds(
    scope,
    matches.map((m) => m.chunkId),
    filters,
  );
  const byId = new Map(rows.map((r) => [r.chunk_id, r]));
  return {
    rows: matches.flatMap((m) => {
      const row = byId.get(m.chunkId);
      return row ? [{ row, similarity: m.score }] : [];
    }),
    complete,
  };
}

/** Chunk rows by id that pass the filters (vector hits are re-checked against D1: tier, tags, time). */
async function rowsByChunkIds(scope: TenantScope, chunkIds: number[], filters: SearchFilters): Promise<SearchRow[]> {
  if (chunkIds.length === 0) return [];
  const where = searchFilterSql(scope, filters);
  const { results } = await scope.d1
    .prepare(
      // Driven by the ids (CROSS JOIN): `tenant_id = ? AND id IN (list)` makes SQLite, without
      // statistics, walk every chunk of the tenant.
      `SELECT ${SEARCH_ROW_COLUMNS} FROM json_each(?) j CROSS JOIN chunks c CROSS JOIN items i
       WHERE c.id = j.value AND c.tenant_id = ? AND i.id = c.item_id AND i.tenant_id = ?${where.sql}`,
    )
    .bind(JSON.stringify(chunkIds), scope.tenantId, scope.tenantId, ...where.params)
    .all<SearchRow>();
  return results;
}

/** Keyword-only hits get their cosine from the stored vectors, so every score means the same. */
export async function fillMissingSimilarities(
  scope: TenantScope,
  services: Services,
  embedQuery: () => Promise<Float32Array | null>,
  entries: { row: SearchRow; similarity: number | null }[],
): Promise<void> {
  const missing = entries.filter((e) => e.similarity === null).map((e) => e.row.chunk_id);
  if (missing.length === 0) return;
  const queryVector = await embedQuery();
  if (!queryVector) return;
  const vectors = await services.vectors.getVectors(scope.tenantId, missing);
  for (const entry of entries) {
    const stored = vectors.get(entry.row.chunk_id);
    if (entry.similarity === null && stored && stored.length === queryVector.length) entry.similarity = dot(queryVector, stored);
  }
}
