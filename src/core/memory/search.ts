import { rerankTop } from "./rerank";
import { dot } from "../shared/vector-math";
import { IN_JSON, type TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { itemFilterSql, type ItemFilter } from "./item-filters";
import { KEYWORD_SCORES_SQL, keywordQueryTerms, keywordScoresParams } from "./keyword-index";
import { DEFAULT_CHANCE_SIMILARITY, MIN_RELEVANCE, fusedScore, keywordPart, vectorPart } from "./relevance";

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
  /** Absolute relevance in 0..1, comparable across queries (relevance.ts); hits below MIN_RELEVANCE are left out. */
  score: number;
  /** Cosine similarity between query and chunk embeddings, when the chunk is embedded. */
  similarity: number | null;
  keywordRank: number | null;
  vectorRank: number | null;
}

export type SearchMode = "hybrid" | "keyword" | "vector";

/**
 * Vector-part weight when HYBRID_VECTOR_WEIGHT is unset. A lexical embedder repeats the BM25 signal
 * with more noise; measured with `npm run bench` (rank fusion, before absolute scores), weights
 * 0 / 0.1 / 0.3 / 1 gave LoCoMo recall@10 73.4 / 72.9 / 67.8 / 61.3 % and MS MARCO nDCG@10
 * 0.616 / 0.607 / 0.590 / 0.573. So with the local embedder the vector part does not count.
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

type KeywordRow = Row & { bm25: number; known: number; known_share: number };

type Candidate = { row: Row; bm25: number; keyword: number; keywordRank: number | null; vectorRank: number | null; similarity: number | null; score: number };

/**
 * Hybrid retrieval: FTS5 BM25 and vector similarity lists over chunks, each hit scored on an absolute
 * scale (relevance.ts) and ordered by that score; hits below MIN_RELEVANCE are dropped, so a query
 * that nothing in the project answers gets no hits. Every statement filters on the scope's tenant;
 * stashed items are excluded unless `tiers` asks.
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
  let queryVector: Promise<Float32Array | null> | null = knownQueryVector ? Promise.resolve(knownQueryVector) : null;
  const embedQuery = () => (queryVector ??= services.embedder.embed([query], "query").then((v) => v[0] ?? null));
  const pool = Math.min(MAX_CANDIDATES, Math.max(50, limit * 4));
  const kind = services.embedder.semantic ? "semantic" : "lexical";
  const vectorWeight = mode === "vector" ? 1 : mode === "keyword" ? 0 : (services.config.hybridVectorWeight ?? DEFAULT_VECTOR_WEIGHT[kind]);
  const chance = services.config.embeddingChanceSimilarity ?? DEFAULT_CHANCE_SIMILARITY[kind];
  const [keyword, vector] = await Promise.all([
    mode !== "vector" ? keywordCandidates(scope, query, filters, pool) : [],
    vectorWeight > 0 ? vectorCandidates(scope, services, embedQuery, filters, pool) : { rows: [], complete: true },
  ]);
  const candidates = new Map<number, Candidate>();
  keyword.forEach((row, rank) => {
    candidates.set(row.chunk_id, { row, bm25: row.bm25, keyword: keywordPart(row.bm25, row.known, row.known_share), keywordRank: rank + 1, vectorRank: null, similarity: null, score: 0 });
  });
  vector.rows.forEach(({ row, similarity }, rank) => {
    const entry = candidates.get(row.chunk_id) ?? { row, bm25: 0, keyword: 0, keywordRank: null, vectorRank: null, similarity: null, score: 0 };
    entry.vectorRank = rank + 1;
    entry.similarity = similarity;
    candidates.set(row.chunk_id, entry);
  });
  const all = [...candidates.values()];
  // A keyword hit outside the vector list still has a cosine, read from its stored vector, unless the
  // list held every embedded chunk (then it has none). Indexes may be approximate, so the list's last
  // cosine is no bound.
  if (vectorWeight > 0 && !vector.complete) await fillMissingSimilarities(scope, services, await embedQuery(), all);
  for (const c of all) {
    const vector = vectorPart(c.similarity, chance);
    c.score = mode === "vector" ? vector : fusedScore(c.keyword, vector, vectorWeight);
  }
  const ranked = all
    .filter((c) => c.score >= MIN_RELEVANCE)
    .sort((a, b) => b.score - a.score || b.bm25 - a.bm25 || (b.similarity ?? -1) - (a.similarity ?? -1) || a.row.chunk_id - b.row.chunk_id);
  const top = await rerankTop(services, query, ranked, limit, (c) => c.row.chunk_content);
  // `similarity` is reported for every hit, whatever counted in its score.
  if (top.length > 0) await fillMissingSimilarities(scope, services, await embedQuery(), top);
  return top.map((c) => toHit(c.row, c.score, c.similarity, c.keywordRank, c.vectorRank));
}

/** BM25 over the tenant's own keyword index (src/core/keyword-index.ts): ranking depends on its data only. */
async function keywordCandidates(scope: TenantScope, query: string, filters: SearchFilters, pool: number): Promise<KeywordRow[]> {
  const terms = keywordQueryTerms(scope.tenantId, query);
  if (terms === null) return [];
  const where = filterSql(scope, filters);
  const { results } = await scope.d1
    .prepare(
      `WITH ${KEYWORD_SCORES_SQL}
       SELECT ${ROW_COLUMNS}, s.score AS bm25, q.known, q.known_share
       FROM keyword_scores s CROSS JOIN keyword_query_info q CROSS JOIN chunks c CROSS JOIN items i
       WHERE c.id = s.chunk_id AND i.id = c.item_id AND c.tenant_id = ? AND i.tenant_id = ?${where.sql}
       ORDER BY s.score DESC, c.id LIMIT ?`,
    )
    .bind(...keywordScoresParams(scope, terms), scope.tenantId, scope.tenantId, ...where.params, pool)
    .all<KeywordRow>();
  return results;
}

/** The vector list; `complete` when the index returned fewer than asked, i.e. every embedded chunk. */
async function vectorCandidates(
  scope: TenantScope,
  services: Services,
  embedQuery: () => Promise<Float32Array | null>,
  filters: SearchFilters,
  pool: number,
): Promise<{ rows: { row: Row; similarity: number }[]; complete: boolean }> {
  const queryVector = await embedQuery();
  if (!queryVector) return { rows: [], complete: true };
  const projects = filters.projects ?? (scope.projects === null ? undefined : [...scope.projects]);
  const matches = await services.vectors.query(scope.tenantId, queryVector, { topK: pool, projects });
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
