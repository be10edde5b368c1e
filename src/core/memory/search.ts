import { rerankTop } from "./rerank";
import { dot } from "../shared/vector-math";
import { IN_JSON, type TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { itemFilterSql, type ItemFilter } from "./item-filters";
import { KEYWORD_SCORES_SQL, keywordQueryTerms, keywordScoresParams } from "./keyword-index";

/** Search filters: the shared item vocabulary; tiers default to the active working set. */
export type SearchFilters = ItemFilter;

export interface SearchHit {
  chunkId: number;
  chunkIndex: number;
  chunkContent: string;
  chunkTokens: number;
  itemId: string;
  project: string;
  kind: string;
  type: string;
  role: string | null;
  conversationId: string | null;
  position: number | null;
  tags: string[];
  metadata: Record<string, unknown>;
  importance: number;
  tier: string;
  createdAt: number;
  /** Fused relevance in 0..1 (1 = first in both the keyword and the vector list). */
  score: number;
  /** Cosine similarity between query and chunk embeddings, when the chunk is embedded. */
  similarity: number | null;
  keywordRank: number | null;
  vectorRank: number | null;
}

export type SearchMode = "hybrid" | "keyword" | "vector";

/** Reciprocal rank fusion constant (Cormack et al.); 60 is the usual choice. */
const RRF_K = 60;
/**
 * Vector-list weight when HYBRID_VECTOR_WEIGHT is unset. A lexical embedder's list repeats the BM25
 * signal with more noise; measured with `npm run bench`, weights 0 / 0.1 / 0.3 / 1 give LoCoMo
 * recall@10 73.4 / 72.9 / 67.8 / 61.3 % and MS MARCO nDCG@10 0.616 / 0.607 / 0.590 / 0.573. So a
 * lexical list does not vote; it is used only when no keyword matches.
 */
const DEFAULT_VECTOR_WEIGHT = { semantic: 1, lexical: 0 };
const MAX_CANDIDATES = 100;

const ROW_COLUMNS = `c.id AS chunk_id, c.chunk_index, c.content AS chunk_content, c.tokens AS chunk_tokens, i.id AS item_id, i.project, i.kind, i.type,
  i.role, i.conversation_id, i.position, i.tags, i.metadata, i.importance, i.tier, i.created_at`;

type Row = {
  chunk_id: number;
  chunk_index: number;
  chunk_content: string;
  chunk_tokens: number;
  item_id: string;
  project: string;
  kind: string;
  type: string;
  role: string | null;
  conversation_id: string | null;
  position: number | null;
  tags: string;
  metadata: string;
  importance: number;
  tier: string;
  created_at: number;
};

/**
 * Hybrid retrieval: FTS5 BM25 and vector similarity lists over chunks, fused by reciprocal rank.
 * Every statement filters on the scope's tenant; stashed items are excluded unless `tiers` asks.
 */
export async function searchChunks(
  scope: TenantScope,
  services: Services,
  query: string,
  filters: SearchFilters,
  limit: number,
  mode: SearchMode = "hybrid",
  /** The query's embedding when the caller already has it (saves an embedder call). */
  knownQueryVector?: Float32Array,
): Promise<SearchHit[]> {
  const embedQuery = async () => knownQueryVector ?? (await services.embedder.embed([query], "query"))[0] ?? null;
  const pool = Math.min(MAX_CANDIDATES, Math.max(50, limit * 4));
  const vectorWeight = services.config.hybridVectorWeight ?? DEFAULT_VECTOR_WEIGHT[services.embedder.semantic ? "semantic" : "lexical"];
  const vectorVotes = mode === "vector" || (mode === "hybrid" && vectorWeight > 0);
  const [keyword, voted] = await Promise.all([
    mode === "vector" ? [] : keywordCandidates(scope, query, filters, pool),
    vectorVotes ? vectorCandidates(scope, services, embedQuery, filters, pool) : null,
  ]);
  // With a silent vector list, hybrid still falls back to it when no keyword matches.
  const vector = voted ?? (mode === "hybrid" && keyword.length === 0 ? await vectorCandidates(scope, services, embedQuery, filters, pool) : { rows: [], queryVector: null });
  const fused = new Map<number, { row: Row; score: number; keywordRank: number | null; vectorRank: number | null; similarity: number | null }>();
  keyword.forEach((row, rank) => {
    fused.set(row.chunk_id, { row, score: 1 / (RRF_K + rank + 1), keywordRank: rank + 1, vectorRank: null, similarity: null });
  });
  vector.rows.forEach(({ row, similarity }, rank) => {
    const entry = fused.get(row.chunk_id) ?? { row, score: 0, keywordRank: null, vectorRank: null, similarity: null };
    entry.score += (keyword.length > 0 ? vectorWeight : 1) / (RRF_K + rank + 1);
    entry.vectorRank = rank + 1;
    entry.similarity = similarity;
    fused.set(row.chunk_id, entry);
  });
  const best = (keyword.length > 0 && vector.rows.length > 0 ? 1 + vectorWeight : 1) / (RRF_K + 1);
  const ranked = [...fused.values()].sort((a, b) => b.score - a.score || a.row.chunk_id - b.row.chunk_id);
  const top = await rerankTop(services, query, ranked, limit, (e) => e.row.chunk_content);
  const queryVector = vector.queryVector ?? (top.length > 0 ? await embedQuery() : null);
  await fillMissingSimilarities(scope, services, queryVector, top);
  return top.map((e) => toHit(e.row, Math.min(1, e.score / best), e.similarity, e.keywordRank, e.vectorRank));
}

/** BM25 over the tenant's own keyword index (src/core/keyword-index.ts): ranking depends on its data only. */
async function keywordCandidates(scope: TenantScope, query: string, filters: SearchFilters, pool: number): Promise<Row[]> {
  const terms = keywordQueryTerms(scope.tenantId, query);
  if (terms === null) return [];
  const where = filterSql(scope, filters);
  const { results } = await scope.d1
    .prepare(
      `WITH ${KEYWORD_SCORES_SQL}
       SELECT ${ROW_COLUMNS} FROM keyword_scores s CROSS JOIN chunks c CROSS JOIN items i
       WHERE c.id = s.chunk_id AND i.id = c.item_id AND c.tenant_id = ? AND i.tenant_id = ?${where.sql}
       ORDER BY s.score DESC, c.id LIMIT ?`,
    )
    .bind(...keywordScoresParams(scope, terms), scope.tenantId, scope.tenantId, ...where.params, pool)
    .all<Row>();
  return results;
}

async function vectorCandidates(
  scope: TenantScope,
  services: Services,
  embedQuery: () => Promise<Float32Array | null>,
  filters: SearchFilters,
  pool: number,
): Promise<{ rows: { row: Row; similarity: number }[]; queryVector: Float32Array | null }> {
  const queryVector = await embedQuery();
  if (!queryVector) return { rows: [], queryVector: null };
  const projects = filters.projects ?? (scope.projects === null ? undefined : [...scope.projects]);
  const matches = await services.vectors.query(scope.tenantId, queryVector, { topK: pool, projects });
  if (matches.length === 0) return { rows: [], queryVector };
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
    queryVector,
  };
}

/** Chunk rows by id that pass the filters (vector hits are re-checked against D1: tier, tags, time). */
async function rowsByChunkIds(scope: TenantScope, chunkIds: number[], filters: SearchFilters): Promise<Row[]> {
  if (chunkIds.length === 0) return [];
  const where = filterSql(scope, filters);
  const { results } = await scope.d1
    .prepare(
      `SELECT ${ROW_COLUMNS} FROM chunks c JOIN items i ON i.id = c.item_id
       WHERE c.tenant_id = ? AND i.tenant_id = ? AND c.id ${IN_JSON}${where.sql}`,
    )
    .bind(scope.tenantId, scope.tenantId, JSON.stringify(chunkIds), ...where.params)
    .all<Row>();
  return results;
}

/** Keyword-only hits get their cosine from the stored vectors, so every score means the same. */
async function fillMissingSimilarities(
  scope: TenantScope,
  services: Services,
  queryVector: Float32Array | null,
  entries: { row: Row; similarity: number | null }[],
): Promise<void> {
  if (!queryVector) return;
  const missing = entries.filter((e) => e.similarity === null).map((e) => e.row.chunk_id);
  if (missing.length === 0) return;
  const vectors = await services.vectors.getVectors(scope.tenantId, missing);
  for (const entry of entries) {
    const stored = vectors.get(entry.row.chunk_id);
    if (entry.similarity === null && stored && stored.length === queryVector.length) entry.similarity = dot(queryVector, stored);
  }
}

/** The filters as SQL; searches look at active items unless told otherwise. */
function filterSql(scope: TenantScope, filters: SearchFilters): { sql: string; params: unknown[] } {
  return itemFilterSql(scope, { ...filters, tiers: filters.tiers ?? ["active"] });
}

function toHit(row: Row, score: number, similarity: number | null, keywordRank: number | null, vectorRank: number | null): SearchHit {
  return {
    chunkId: row.chunk_id,
    chunkIndex: row.chunk_index,
    chunkContent: row.chunk_content,
    chunkTokens: row.chunk_tokens,
    itemId: row.item_id,
    project: row.project,
    kind: row.kind,
    type: row.type,
    role: row.role,
    conversationId: row.conversation_id,
    position: row.position,
    tags: JSON.parse(row.tags) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    importance: row.importance,
    tier: row.tier,
    createdAt: row.created_at,
    score: round(score),
    similarity: similarity === null ? null : round(similarity),
    keywordRank,
    vectorRank,
  };
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
