import type { TenantScope } from "../../db/scope";
import { keywordCode, queryPhrases, storedTerm, tenantIndexText } from "../shared/fts-text";

/**
 * Keyword ranking that depends on the caller's own data only.
 *
 * `chunks_fts` is one FTS5 table for every tenant, and FTS5's bm25() reads table-wide statistics
 * (document frequencies, row count, average length): one tenant's writes would reorder another's
 * results and reveal which words others use. So:
 * - each tenant indexes its tokens under a private prefix (fts-text.ts), so its postings are its own
 *   and a lookup never walks other tenants' postings;
 * - BM25 is computed here in SQL, with FTS5's formula (k1 = 1.2, b = 0.75, column weights content 1.0,
 *   context 0.5, IDF floored at 1e-6), from the tenant's postings read through `chunks_fts_instance`
 *   (fts5vocab), its chunk lengths (chunks.fts_tokens) and its totals (keyword_stats);
 * - every statement joins the tenant's chunks, so even colliding prefixes cannot mix tenants.
 * Rows written before this scheme (fts_tokens IS NULL) are re-indexed in bounded batches by the cron
 * sweep; while a tenant has some left its queries also look up the plain terms of those rows.
 */

/** BM25 column weights of chunks_fts (content, context), FTS5's k1 and b. */
const CONTEXT_WEIGHT = 0.5;
const K1 = 1.2;
const B = 0.75;

export interface KeywordRow {
  content: string;
  context: string;
  /** Tokens in both columns: the row's BM25 document length. */
  tokens: number;
}

/** A chunk's chunks_fts row in the tenant's private term space. */
export function keywordRow(tenantId: string, content: string, context: string): KeywordRow {
  const code = keywordCode(tenantId);
  const a = tenantIndexText(code, content);
  const b = tenantIndexText(code, context);
  return { content: a.text, context: b.text, tokens: a.tokens + b.tokens };
}

/** Adds newly indexed chunks to the tenant's statistics (in the batch that inserts them). */
export function countKeywordChunks(scope: TenantScope, chunks: number, tokens: number): D1PreparedStatement {
  return scope.d1
    .prepare(
      "INSERT INTO keyword_stats (tenant_id, chunks, tokens) VALUES (?, ?, ?) " +
        "ON CONFLICT (tenant_id) DO UPDATE SET chunks = chunks + excluded.chunks, tokens = tokens + excluded.tokens",
    )
    .bind(scope.tenantId, chunks, tokens);
}

/**
 * Removes the chunks of the items in `itemIdsJson` (a JSON array) from the tenant's statistics; must
 * run in the deleting batch before the chunks are deleted.
 */
export function uncountKeywordChunks(scope: TenantScope, itemIdsJson: string): D1PreparedStatement {
  return scope.d1
    .prepare(
      `UPDATE keyword_stats SET chunks = MAX(0, chunks - s.n), tokens = MAX(0, tokens - s.t), legacy_chunks = MAX(0, legacy_chunks - s.legacy)
       FROM (SELECT COUNT(fts_tokens) AS n, COALESCE(SUM(fts_tokens), 0) AS t, COUNT(*) - COUNT(fts_tokens) AS legacy
             FROM chunks WHERE tenant_id = ? AND item_id IN (SELECT value FROM json_each(?))) AS s
       WHERE keyword_stats.tenant_id = ?`,
    )
    .bind(scope.tenantId, itemIdsJson, scope.tenantId);
}

/**
 * Statements that give chunks a new context (the indexed second column): their chunks_fts rows are
 * rewritten in the tenant's term space, chunks.context and fts_tokens follow, and the tenant's BM25
 * statistics take the difference (rows indexed the old way move from the legacy count, as the re-index
 * sweep does). The caller re-queues embedding: the context is embedded with each chunk.
 */
export function rewriteChunkContexts(scope: TenantScope, chunks: { id: number; content: string; context: string; ftsTokens: number | null }[]): D1PreparedStatement[] {
  if (chunks.length === 0) return [];
  const rows = chunks.map((c) => ({ ...keywordRow(scope.tenantId, c.content, c.context), id: c.id, raw: c.context, old: c.ftsTokens }));
  const json = JSON.stringify(rows.map((r) => [r.id, r.content, r.context, r.tokens, r.raw]));
  const rowsOf = "(SELECT j.value ->> 0 AS id, j.value ->> 1 AS content, j.value ->> 2 AS context, j.value ->> 3 AS tokens, j.value ->> 4 AS raw FROM json_each(?) j)";
  const legacy = rows.filter((r) => r.old === null).length;
  const tokenDelta = rows.reduce((sum, r) => sum + r.tokens - (r.old ?? 0), 0);
  return [
    scope.d1.prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM ${rowsOf})`).bind(json),
    scope.d1.prepare(`INSERT INTO chunks_fts (rowid, content, context) SELECT id, content, context FROM ${rowsOf}`).bind(json),
    scope.d1.prepare(`UPDATE chunks SET context = p.raw, fts_tokens = p.tokens FROM ${rowsOf} AS p WHERE chunks.id = p.id AND chunks.tenant_id = ?`).bind(json, scope.tenantId),
    scope.d1
      .prepare("UPDATE keyword_stats SET chunks = chunks + ?, tokens = tokens + ?, legacy_chunks = MAX(0, legacy_chunks - ?) WHERE tenant_id = ?")
      .bind(legacy, tokenDelta, legacy, scope.tenantId),
  ];
}

/** [phrase index, position in phrase, phrase length, stored term, 1 if a legacy (unprefixed) term, weight]. */
type TermRow = [number, number, number, string, 0 | 1, number];

/**
 * The query's terms as chunks_fts stores them, as one JSON array (bound as one parameter), or null
 * when the query has no searchable word.
 */
export function keywordQueryTerms(tenantId: string, query: string): string | null {
  const phrases = queryPhrases(query);
  if (phrases === null) return null;
  const code = keywordCode(tenantId);
  const rows: TermRow[] = [];
  phrases.forEach((tokens, phrase) => {
    tokens.forEach((token, pos) => {
      rows.push([phrase, pos, tokens.length, storedTerm(code, token), 0, 1]);
      rows.push([phrase, pos, tokens.length, storedTerm("", token), 1, 1]);
    });
  });
  return JSON.stringify(rows);
}

/** Weighted single-token terms (relevance feedback) in the same JSON form, the tenant's own terms only. */
export function weightedKeywordTerms(tenantId: string, terms: { token: string; weight: number }[]): string {
  const code = keywordCode(tenantId);
  return JSON.stringify(terms.map((t, phrase): TermRow => [phrase, 0, 1, storedTerm(code, t.token), 0, t.weight]));
}

/** Feedback terms kept for the second query: the strongest by weight x IDF. */
export const FEEDBACK_TERMS = 10;

/** How a keyword CTE list is built (`keywordScoresSql`). */
export interface KeywordScoresOptions {
  /** Weighted feedback terms instead of the query's own (relevance feedback, search-expansion.ts). */
  feedback?: boolean;
  /** Score only these chunks: a SQL set of chunk ids (statistics stay the tenant's). */
  onlyChunks?: string;
  /** Number of the first parameter: the terms JSON is ?first, the tenant id ?first+1. */
  first?: number;
}

/**
 * A CTE list ending in `keyword_scores(chunk_id, score)`: BM25 of the tenant's chunks matching any
 * phrase of the query (higher is better); and `keyword_query_info(known, known_share)`, what an
 * absolute score needs (relevance.ts): `known` is the BM25 of a chunk of average length holding each
 * phrase that occurs in the tenant once (the weighted sum of their IDF), `known_share` the share of
 * the query's information held by phrases that occur at all, with Lucene's IDF
 * ln(1 + (N - n + 0.5) / (n + 0.5)), which stays positive where FTS5's is floored (a phrase in most
 * chunks, a tenant of a few chunks).
 * A query's phrases weigh 1 each. With `feedback`, the terms are candidate expansion terms weighted by
 * how much the first hits hold them: only the FEEDBACK_TERMS strongest by weight x IDF are kept, their
 * weights scaled so the strongest weighs 1; their document frequencies come from chunks_fts_row (one
 * seek per term), so `onlyChunks` can limit the scoring to a few chunks without changing the IDF.
 * Binds (`keywordScoresParams`): the terms JSON as ?first, the tenant id as ?first+1.
 */
export function keywordScoresSql(options: KeywordScoresOptions = {}): string {
  const first = options.first ?? 1;
  const terms = `?${first}`;
  const tenant = `?${first + 1}`;
  const only = options.onlyChunks ? ` AND v.doc IN ${options.onlyChunks}` : "";
  const selection = options.feedback
    ? `keyword_terms(phrase, pos, size, term, weight, df) AS MATERIALIZED (
    SELECT j.value ->> 0, 0, 1, j.value ->> 3, j.value ->> 5, r.doc
    FROM json_each(${terms}) j CROSS JOIN chunks_fts_row r, keyword_totals s
    WHERE r.term = j.value ->> 3
    ORDER BY (j.value ->> 5) * MAX(ln((s.n - r.doc + 0.5) / (r.doc + 0.5)), 1e-6) DESC, 1
    LIMIT ${FEEDBACK_TERMS}
  )`
    : `keyword_terms(phrase, pos, size, term, weight, df) AS MATERIALIZED (
    SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, 1.0, NULL FROM json_each(${terms}) j
    WHERE j.value ->> 4 = 0 OR EXISTS (SELECT 1 FROM chunks WHERE tenant_id = ${tenant} AND fts_tokens IS NULL)
  )`;
  const idf = options.feedback
    ? `keyword_idf(phrase, w, df) AS (
    SELECT t.phrase, MAX(ln((s.n - t.df + 0.5) / (t.df + 0.5)), 1e-6), t.df FROM keyword_terms t, keyword_totals s
  )`
    : `keyword_idf(phrase, w, df) AS (
    SELECT f.phrase, MAX(COALESCE(ln((s.n - COUNT(*) + 0.5) / (COUNT(*) + 0.5)), 0.0), 1e-6), COUNT(*)
    FROM keyword_freq f, keyword_totals s GROUP BY f.phrase
  )`;
  const weights = options.feedback
    ? "keyword_weight(phrase, weight) AS (SELECT i.phrase, t.weight * i.w / MAX(t.weight * i.w) OVER () FROM keyword_idf i JOIN keyword_terms t ON t.phrase = i.phrase)"
    : "keyword_weight(phrase, weight) AS (SELECT phrase, 1.0 FROM keyword_idf)";
  return `
  keyword_totals(n, avgdl) AS (
    SELECT COALESCE(k.chunks, 0) + COALESCE(k.legacy_chunks, 0),
           CASE WHEN k.chunks > 0 AND k.tokens > 0 THEN CAST(k.tokens AS REAL) / k.chunks ELSE 1.0 END
    FROM (SELECT 1) LEFT JOIN keyword_stats k ON k.tenant_id = ${tenant}
  ),
  ${selection},
  -- Term frequencies per phrase and chunk (content counts 1, context ${CONTEXT_WEIGHT}), with the chunk's length.
  -- CROSS JOIN: the terms drive the lookups (one index seek per term), then each posting's chunk; the
  -- other orders would scan the whole index, or every posting for each of the tenant's chunks. A
  -- one-token phrase is counted in one grouping, with its chunk joined inline.
  keyword_freq(phrase, doc, f, len) AS (
    SELECT t.phrase, v.doc, SUM(CASE v.col WHEN 'content' THEN 1.0 ELSE ${CONTEXT_WEIGHT} END), c.fts_tokens
    FROM keyword_terms t CROSS JOIN chunks_fts_instance v CROSS JOIN chunks c
    WHERE v.term = t.term AND t.size = 1 AND c.id = v.doc AND c.tenant_id = ${tenant}${only}
    GROUP BY t.phrase, v.doc
    UNION ALL
    -- a longer phrase (a CJK run): places where every token sits at its offset from a common start
    SELECT h.phrase, h.doc, SUM(CASE h.col WHEN 'content' THEN 1.0 ELSE ${CONTEXT_WEIGHT} END), c.fts_tokens
    FROM (
      SELECT t.phrase, v.doc, v.col
      FROM keyword_terms t CROSS JOIN chunks_fts_instance v
      WHERE v.term = t.term AND t.size > 1${only}
      GROUP BY t.phrase, v.doc, v.col, v."offset" - t.pos
      HAVING COUNT(*) = MAX(t.size)
    ) h CROSS JOIN chunks c
    WHERE c.id = h.doc AND c.tenant_id = ${tenant}
    GROUP BY h.phrase, h.doc
  ),
  ${idf},
  ${weights},
  keyword_query_info(known, known_share) AS (
    SELECT (SELECT COALESCE(SUM(i.w * kw.weight), 0) FROM keyword_weight kw JOIN keyword_idf i ON i.phrase = kw.phrase),
           SUM(CASE WHEN i.df IS NULL THEN 0 ELSE ln(1 + (MAX(s.n - i.df, 0) + 0.5) / (i.df + 0.5)) END)
             / SUM(ln(1 + (MAX(s.n - COALESCE(i.df, 0), 0) + 0.5) / (COALESCE(i.df, 0) + 0.5)))
    FROM (SELECT DISTINCT phrase FROM keyword_terms) p LEFT JOIN keyword_idf i ON i.phrase = p.phrase, keyword_totals s
  ),
  keyword_scores(chunk_id, score) AS (
    SELECT f.doc, SUM(kw.weight * i.w * f.f * ${K1 + 1} / (f.f + ${K1} * (${1 - B} + ${B} * COALESCE(f.len, s.avgdl) / s.avgdl)))
    FROM keyword_freq f JOIN keyword_idf i ON i.phrase = f.phrase JOIN keyword_weight kw ON kw.phrase = f.phrase, keyword_totals s
    GROUP BY f.doc
  )`;
}

/** The values of `keywordScoresSql`'s two parameters, in order. */
export function keywordScoresParams(scope: TenantScope, termsJson: string): unknown[] {
  return [termsJson, scope.tenantId];
}

/** Chunks re-indexed per batch, and the most text (prefixed, as JSON) one batch binds. */
export const REINDEX_BATCH = 200;
const REINDEX_MAX_CHARS = 500_000;

/** The rows of a re-index batch that still need it (JSON [[id, content, context, tokens]...]). */
const PENDING = `(SELECT j.value ->> 0 AS id, j.value ->> 1 AS content, j.value ->> 2 AS context, j.value ->> 3 AS tokens
  FROM json_each(?) j JOIN chunks c ON c.id = j.value ->> 0 WHERE c.fts_tokens IS NULL)`;

/**
 * Re-indexes up to `limit` chunks written before tenant-private terms (tenant by tenant, so each
 * tenant's queries stop looking up plain terms as soon as its own rows are done): rewrites their
 * chunks_fts rows with the prefixed terms, records their length and moves them from the tenant's
 * legacy count to its statistics, all in one batch. Safe to run concurrently or to repeat (rows
 * already rewritten or deleted meanwhile are skipped). Returns how many chunks it read; fewer than
 * `limit` means none are left.
 */
export async function reindexLegacyChunks(d1: D1Database, limit = REINDEX_BATCH): Promise<number> {
  const { results } = await d1
    .prepare("SELECT id, tenant_id, content, context FROM chunks WHERE fts_tokens IS NULL ORDER BY tenant_id, id LIMIT ?")
    .bind(limit)
    .all<{ id: number; tenant_id: string; content: string; context: string }>();
  if (results.length === 0) return 0;
  const rows: [number, string, string, number][] = [];
  let chars = 0;
  for (const chunk of results) {
    const row = keywordRow(chunk.tenant_id, chunk.content, chunk.context);
    chars += row.content.length + row.context.length;
    if (rows.length > 0 && chars > REINDEX_MAX_CHARS) break;
    rows.push([chunk.id, row.content, row.context, row.tokens]);
  }
  const json = JSON.stringify(rows);
  await d1.batch([
    d1
      .prepare(
        `UPDATE keyword_stats SET chunks = chunks + s.n, tokens = tokens + s.t, legacy_chunks = MAX(0, legacy_chunks - s.n)
         FROM (SELECT c.tenant_id, COUNT(*) AS n, SUM(p.tokens) AS t FROM ${PENDING} p JOIN chunks c ON c.id = p.id GROUP BY c.tenant_id) AS s
         WHERE keyword_stats.tenant_id = s.tenant_id`,
      )
      .bind(json),
    d1.prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM ${PENDING})`).bind(json),
    d1.prepare(`INSERT INTO chunks_fts (rowid, content, context) SELECT id, content, context FROM ${PENDING}`).bind(json),
    d1.prepare(`UPDATE chunks SET fts_tokens = p.tokens FROM ${PENDING} AS p WHERE chunks.id = p.id`).bind(json),
  ]);
  return rows.length < results.length ? limit : results.length;
}

/** Runs re-index batches until none are left or `maxBatches` ran; true if chunks may remain. */
export async function reindexLegacyBatches(d1: D1Database, maxBatches: number): Promise<boolean> {
  for (let i = 0; i < maxBatches; i++) {
    if ((await reindexLegacyChunks(d1)) < REINDEX_BATCH) return false;
  }
  return true;
}

/** A re-index job chain that has not run for this long is taken to be lost. */
export const REINDEX_CHAIN_STALE_MS = 10 * 60_000;

/**
 * Records that a re-index job chain is alive. With `onlyIfStale`, claims the chain only when none ran
 * within REINDEX_CHAIN_STALE_MS (returns false if another one is alive), so sweeps do not pile up chains.
 */
export async function reindexHeartbeat(d1: D1Database, now: number, onlyIfStale = false): Promise<boolean> {
  const claimed = await d1
    .prepare(
      "INSERT INTO keyword_reindex (id, heartbeat_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at WHERE heartbeat_at <= ? RETURNING id",
    )
    .bind(now, onlyIfStale ? now - REINDEX_CHAIN_STALE_MS : now)
    .first();
  return claimed !== null;
}
