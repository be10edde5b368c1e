import type { TenantScope } from "../../db/scope";
import type { Services, VectorMatch } from "../../ports";
import { dot } from "../../shared/vector-math";
import {
  SEARCH_ROW_COLUMNS,
  type SearchFilters,
  type SearchRow,
  searchedProjects,
  searchFilterSql,
} from "./search-rows";

/** Search's vector part (search.ts): the vector list, the cosines of hits it did not hold, and its rows' statement. */

/** The vector list as search uses it: its matches, best first, and the cosines of the keyword hits it did not hold. */
export interface VectorList {
  matches: VectorMatch[];
  /** Cosines of keyword hits outside the list, by chunk id (none when the list held every embedded chunk). */
  keywordCosines: Map<number, number>;
}

/** No vector part: the search's vector weight is 0, or the embedder or index failed. */
export const noVectorList = (): VectorList => ({ matches: [], keywordCosines: new Map() });

/**
 * The vector list (the query's embedding, then the index), then, once the keyword list is in, the stored vectors of
 * its hits outside the vector list (so every score means the same). Its rows are read in search's second round trip
 * (vectorRowsStatement), with what the first hits point to. The list is `complete` when the index returned fewer than
 * asked, i.e. every embedded chunk: a keyword hit outside it has no vector, and none is read. Indexes may be
 * approximate, so the list's last cosine is no bound. `onCosinesFailed`: the cosines could not be read; the list is
 * still used.
 */
export async function vectorList(
  scope: TenantScope,
  services: Services,
  embedQuery: () => Promise<Float32Array | null>,
  filters: SearchFilters,
  pool: number,
  keywordHits: Promise<number[] | null>,
  onCosinesFailed: (error: unknown) => void,
): Promise<VectorList> {
  const queryVector = await embedQuery();
  if (!queryVector) return noVectorList();
  const projects = searchedProjects(scope, filters);
  const matches = await services.vectors.query(scope.tenantId, queryVector, {
    topK: pool,
    projects: projects === null ? undefined : [...projects],
  });
  if (matches.length < pool) return { matches, keywordCosines: new Map() };
  const listed = new Set(matches.map((m) => m.chunkId));
  const keywordCosines = await keywordHits
    .then((ids) =>
      cosinesOf(
        scope,
        services,
        queryVector,
        (ids ?? []).filter((id) => !listed.has(id)),
      ),
    )
    .catch((error: unknown) => (onCosinesFailed(error), new Map<number, number>()));
  return { matches, keywordCosines };
}

/** Chunk rows by id that pass the filters (vector hits are re-checked against D1: tier, tags, time). */
export function vectorRowsStatement(
  scope: TenantScope,
  chunkIds: number[],
  filters: SearchFilters,
): D1PreparedStatement {
  const where = searchFilterSql(scope, filters);
  return scope.d1
    .prepare(
      // Driven by the ids (CROSS JOIN): `tenant_id = ? AND id IN (list)` makes SQLite, without
      // statistics, walk every chunk of the tenant.
      `SELECT ${SEARCH_ROW_COLUMNS} FROM json_each(?) j CROSS JOIN chunks c CROSS JOIN items i
       WHERE c.id = j.value AND c.tenant_id = ? AND i.id = c.item_id AND i.tenant_id = ?${where.sql}`,
    )
    .bind(JSON.stringify(chunkIds), scope.tenantId, scope.tenantId, ...where.params);
}

/** Hits without a cosine (from neighbours or links) get theirs from the stored vectors, so every score means the same. */
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
  const cosines = await cosinesOf(scope, services, queryVector, missing);
  for (const entry of entries)
    if (entry.similarity === null) entry.similarity = cosines.get(entry.row.chunk_id) ?? null;
}

/** The query's cosine with each chunk's stored vector, by chunk id (a chunk without one, or of other dimensions, has none). */
async function cosinesOf(
  scope: TenantScope,
  services: Services,
  queryVector: Float32Array,
  chunkIds: number[],
): Promise<Map<number, number>> {
  const cosines = new Map<number, number>();
  if (chunkIds.length === 0) return cosines;
  const vectors = await services.vectors.getVectors(scope.tenantId, chunkIds);
  for (const [chunkId, stored] of vectors)
    if (stored.length === queryVector.length) cosines.set(chunkId, dot(queryVector, stored));
  return cosines;
}
