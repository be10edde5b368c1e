import type { TenantScope } from "../db/scope";
import { keywordCode, queryPhrases, storedTerm, tenantIndexText } from "./fts-text";

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
 * sweep; until a tenant has none left its queries also look up the plain terms of those rows.
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
      `UPDATE keyword_stats SET chunks = chunks - s.n, tokens = tokens - s.t, legacy_chunks = legacy_chunks - s.legacy
       FROM (SELECT COUNT(fts_tokens) AS n, COALESCE(SUM(fts_tokens), 0) AS t, COUNT(*) - COUNT(fts_tokens) AS legacy
             FROM chunks WHERE tenant_id = ? AND item_id IN (SELECT value FROM json_each(?))) AS s
       WHERE keyword_stats.tenant_id = ?`,
    )
    .bind(scope.tenantId, itemIdsJson, scope.tenantId);
}

/** [phrase index, position in phrase, phrase length, stored term, 1 if a legacy (unprefixed) term]. */
type TermRow = [number, number, number, string, 0 | 1];

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
      rows.push([phrase, pos, tokens.length, storedTerm(code, token), 0]);
      rows.push([phrase, pos, tokens.length, storedTerm("", token), 1]);
    });
  });
  return JSON.stringify(rows);
}

/**
 * A CTE list ending in `keyword_scores(chunk_id, score)`: BM25 of the tenant's chunks matching any
 * phrase of the query (higher is better). Binds, in order: the terms JSON, then the tenant id 3 times
 * (`keywordScoresParams`).
 */
export const KEYWORD_SCORES_SQL = `
  keyword_terms(phrase, pos, size, term) AS MATERIALIZED (
    SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3 FROM json_each(?) j
    WHERE j.value ->> 4 = 0 OR (SELECT legacy_chunks FROM keyword_stats WHERE tenant_id = ?) > 0
  ),
  keyword_hits(phrase, doc, col, start) AS (
    SELECT t.phrase, v.doc, v.col, v."offset" - t.pos
    FROM keyword_terms t JOIN chunks_fts_instance v ON v.term = t.term
    GROUP BY t.phrase, v.doc, v.col, v."offset" - t.pos
    HAVING COUNT(*) = MAX(t.size)
  ),
  keyword_freq(phrase, doc, f, len) AS (
    SELECT h.phrase, h.doc, SUM(CASE h.col WHEN 'content' THEN 1.0 ELSE ${CONTEXT_WEIGHT} END), c.fts_tokens
    FROM keyword_hits h JOIN chunks c ON c.id = h.doc
    WHERE c.tenant_id = ?
    GROUP BY h.phrase, h.doc
  ),
  keyword_totals(n, avgdl) AS (
    SELECT COALESCE(k.chunks, 0) + COALESCE(k.legacy_chunks, 0),
           CASE WHEN k.chunks > 0 AND k.tokens > 0 THEN CAST(k.tokens AS REAL) / k.chunks ELSE 1.0 END
    FROM (SELECT 1) LEFT JOIN keyword_stats k ON k.tenant_id = ?
  ),
  keyword_idf(phrase, w) AS (
    SELECT f.phrase, MAX(COALESCE(ln((s.n - COUNT(*) + 0.5) / (COUNT(*) + 0.5)), 0.0), 1e-6)
    FROM keyword_freq f, keyword_totals s GROUP BY f.phrase
  ),
  keyword_scores(chunk_id, score) AS (
    SELECT f.doc, SUM(i.w * f.f * ${K1 + 1} / (f.f + ${K1} * (${1 - B} + ${B} * COALESCE(f.len, s.avgdl) / s.avgdl)))
    FROM keyword_freq f JOIN keyword_idf i ON i.phrase = f.phrase, keyword_totals s
    GROUP BY f.doc
  )`;

export function keywordScoresParams(scope: TenantScope, termsJson: string): unknown[] {
  return [termsJson, scope.tenantId, scope.tenantId, scope.tenantId];
}

