import { keywordCode, queryPhrases, storedTerm } from "../shared/fts-text";

/**
 * BM25 over the tenant's own keyword index (keyword-index.ts says why it is computed in SQL), as CTE lists
 * that statements embed: FTS5's formula (k1 = 1.2, b = 0.75, column weights content 1.0, context 0.5,
 * IDF floored at 1e-6) from the tenant's postings (`chunks_fts_instance`), chunk lengths
 * (chunks.fts_tokens) and totals (keyword_stats).
 *
 * The SQL holds only what the terms need (no CJK-phrase branch for a query without one, no weights for
 * the query's own terms): D1 prepares every statement anew, and locally preparing these lists took
 * about as long as running them on LoCoMo (node:sqlite: 0.33 ms prepared, 0.15 ms in this form).
 */

/** BM25 column weights of chunks_fts (content, context), FTS5's k1 and b. */
const CONTEXT_WEIGHT = 0.5;
const K1 = 1.2;
const B = 0.75;

/** [phrase index, position in phrase, phrase length, stored term, 1 if a legacy (unprefixed) term, weight]. */
type TermRow = [number, number, number, string, 0 | 1, number];

/** A query's terms as one JSON array (bound as one parameter); `phrases`: whether some phrase has several tokens (a CJK run). */
export interface QueryTerms {
  json: string;
  phrases: boolean;
}

/** The query's terms as chunks_fts stores them, or null when the query has no searchable word. */
export function keywordQueryTerms(tenantId: string, query: string): QueryTerms | null {
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
  return { json: JSON.stringify(rows), phrases: phrases.some((tokens) => tokens.length > 1) };
}

/** Weighted single-token terms (relevance feedback) in the same JSON form, the tenant's own terms only. */
export function weightedKeywordTerms(tenantId: string, terms: { token: string; weight: number }[]): string {
  const code = keywordCode(tenantId);
  return JSON.stringify(terms.map((t, phrase): TermRow => [phrase, 0, 1, storedTerm(code, t.token), 0, t.weight]));
}

/** Feedback terms kept for the second query: the strongest by weight x IDF. */
export const FEEDBACK_TERMS = 10;

const columnWeight = `CASE v.col WHEN 'content' THEN 1.0 ELSE ${CONTEXT_WEIGHT} END`;
/** A phrase's term frequency part, its chunk's length and the tenant's totals at hand (s). */
const saturated = (f: string, len: string) => `${f} * ${K1 + 1} / (${f} + ${K1} * (${1 - B} + ${B} * COALESCE(${len}, s.avgdl) / s.avgdl))`;

/** `keyword_totals(n, avgdl)`: the tenant's chunk count and average length (one row, even for a tenant with none). */
function totalsCte(tenant: string): string {
  return `keyword_totals(n, avgdl) AS MATERIALIZED (
    SELECT COALESCE(k.chunks, 0) + COALESCE(k.legacy_chunks, 0),
           CASE WHEN k.chunks > 0 AND k.tokens > 0 THEN CAST(k.tokens AS REAL) / k.chunks ELSE 1.0 END
    FROM (SELECT 1) LEFT JOIN keyword_stats k ON k.tenant_id = ${tenant}
  )`;
}

/** How a query's CTE list is named and bound (`queryScoresSql`). */
export interface QueryScoresOptions {
  /** Number of the terms JSON parameter; the tenant id is always ?2. */
  terms?: number;
  /** Prefix of the list's names (`keyword`: keyword_ranked...), so one statement can hold two lists. */
  prefix?: string;
  /** Whether the list defines `keyword_totals` (a second list in the statement reuses the first's). */
  totals?: boolean;
  /** A condition the list is computed under (else it is empty at no cost): SQL evaluated once. */
  onlyIf?: string;
  /**
   * Number of a parameter holding the projects searched (JSON array), when the search names them: other projects'
   * postings are left out where the chunk row is read anyway, so they are neither ranked nor walked past. The
   * IDF stays the tenant's (document frequencies from chunks_fts_row), so scores do not change.
   */
  projects?: number;
}

/**
 * The query's list: a CTE list ending in `<prefix>_ranked(chunk_id, score)`, the BM25 of the tenant's
 * chunks matching any phrase of the query, best first (materialized in that order, so a statement can
 * walk it and stop); and `<prefix>_query_info(known, known_share)`, what an absolute score needs
 * (relevance.ts): `known` is the BM25 of a chunk of average length holding each phrase that occurs in the
 * tenant once (the sum of their IDF), `known_share` the share of the query's information held by phrases
 * that occur at all, with Lucene's IDF ln(1 + (N - n + 0.5) / (n + 0.5)), which stays positive where
 * FTS5's is floored (a phrase in most chunks, a tenant of a few chunks). Binds the terms JSON as ?1 (or
 * `options.terms`) and the tenant id as ?2.
 */
export function queryScoresSql(terms: QueryTerms, options: QueryScoresOptions = {}): string {
  const tenant = "?2";
  const p = options.prefix ?? "keyword";
  const onlyIf = options.onlyIf ? ` AND ${options.onlyIf}` : "";
  // A longer phrase (a CJK run) is found where every token sits at its offset from a common start.
  const phrases = terms.phrases
    ? `
    UNION ALL
    SELECT h.phrase, h.doc, SUM(h.f), c.fts_tokens
    FROM (
      SELECT t.phrase, v.doc, ${columnWeight} AS f
      FROM ${p}_terms t CROSS JOIN chunks_fts_instance v
      WHERE v.term = t.term AND t.size > 1
      GROUP BY t.phrase, v.doc, v.col, v."offset" - t.pos
      HAVING COUNT(*) = MAX(t.size)
    ) h CROSS JOIN chunks c INDEXED BY chunks_postings
    WHERE c.id = h.doc AND c.tenant_id = ${tenant}
    GROUP BY h.phrase, h.doc`
    : "";
  const totals = options.totals === false ? "" : `${totalsCte(tenant)},
  `;
  // A chunk written before migration 0014 has no project: it passes here, and the walk checks its item.
  const inProjects = options.projects ? ` AND (c.project IN (SELECT value FROM json_each(?${options.projects})) OR c.project IS NULL)` : "";
  // A longer phrase's documents are counted from its matches (tenant-wide, as the phrase branch is not limited to the projects).
  const phraseDf = terms.phrases
    ? `
      UNION ALL
      SELECT phrase, COUNT(*) FROM ${p}_freq WHERE phrase IN (SELECT phrase FROM ${p}_terms WHERE size > 1) GROUP BY phrase`
    : "";
  return `
  ${totals}${p}_terms(phrase, pos, size, term, legacy) AS MATERIALIZED (
    SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4 FROM json_each(?${options.terms ?? 1}) j
    WHERE (j.value ->> 4 = 0 OR EXISTS (SELECT 1 FROM chunks WHERE tenant_id = ${tenant} AND fts_tokens IS NULL))${onlyIf}
  ),
  -- Term frequencies per phrase and chunk (content counts 1, context ${CONTEXT_WEIGHT}), with the chunk's length.
  -- CROSS JOIN: the terms drive the lookups (one index seek per term), then each posting's chunk; the
  -- other orders would scan the whole index, or every posting for each of the tenant's chunks. A posting's chunk
  -- is read from chunks_postings, which holds all that is needed here: SQLite would look it up by rowid in the
  -- table, a page of text per chunk (one term's 9,080 postings at 100k chunks: 11.2 ms there, 4.8 ms here).
  -- The phrase branch, the legacy count and feedback read the same index.
  ${p}_freq(phrase, doc, f, len) AS MATERIALIZED (
    SELECT t.phrase, v.doc, SUM(${columnWeight}), c.fts_tokens
    FROM ${p}_terms t CROSS JOIN chunks_fts_instance v CROSS JOIN chunks c INDEXED BY chunks_postings
    WHERE v.term = t.term AND t.size = 1 AND c.id = v.doc AND c.tenant_id = ${tenant}${inProjects}
    GROUP BY t.phrase, v.doc${phrases}
  ),
  -- Documents per phrase in the whole tenant: a tenant term's from chunks_fts_row (one seek), a legacy (shared) term's
  -- by counting the tenant's own postings.
  ${p}_df(phrase, df) AS MATERIALIZED (
    SELECT phrase, SUM(n) FROM (
      SELECT t.phrase, r.doc AS n FROM ${p}_terms t CROSS JOIN chunks_fts_row r WHERE r.term = t.term AND t.size = 1 AND t.legacy = 0
      UNION ALL
      SELECT t.phrase, COUNT(DISTINCT v.doc) FROM ${p}_terms t CROSS JOIN chunks_fts_instance v CROSS JOIN chunks c INDEXED BY chunks_postings
      WHERE t.legacy = 1 AND t.size = 1 AND v.term = t.term AND c.id = v.doc AND c.tenant_id = ${tenant} GROUP BY t.phrase${phraseDf}
    ) GROUP BY phrase
  ),
  ${p}_idf(phrase, w, df) AS MATERIALIZED (
    SELECT d.phrase, MAX(COALESCE(ln((s.n - d.df + 0.5) / (d.df + 0.5)), 0.0), 1e-6), d.df
    FROM ${p}_df d, keyword_totals s
  ),
  ${p}_query_info(known, known_share) AS (
    SELECT COALESCE(SUM(i.w), 0),
           SUM(CASE WHEN i.df IS NULL THEN 0 ELSE ln(1 + (MAX(s.n - i.df, 0) + 0.5) / (i.df + 0.5)) END)
             / SUM(ln(1 + (MAX(s.n - COALESCE(i.df, 0), 0) + 0.5) / (COALESCE(i.df, 0) + 0.5)))
    FROM (SELECT DISTINCT phrase FROM ${p}_terms) p LEFT JOIN ${p}_idf i ON i.phrase = p.phrase, keyword_totals s
  ),
  ${p}_ranked(chunk_id, score) AS MATERIALIZED (
    SELECT f.doc, SUM(i.w * ${saturated("f.f", "f.len")}) AS score
    FROM ${p}_freq f JOIN ${p}_idf i ON i.phrase = f.phrase, keyword_totals s
    GROUP BY f.doc ORDER BY score DESC, f.doc
  )`;
}

/**
 * Relevance feedback's list (search-expansion.ts): a CTE list ending in `feedback_scores(chunk_id, score)`
 * over the chunks of `onlyChunks` (a SQL set of chunk ids), and `feedback_known(known)`. The terms are
 * candidate expansion words (single tokens) weighted by how much the first hits hold them: only the
 * FEEDBACK_TERMS strongest by weight x IDF are kept, their weights scaled so the strongest weighs 1.
 * Their document frequencies come from chunks_fts_row (one seek per term), so the scoring can be limited
 * to a few chunks without changing the IDF; every kept term occurs, so the query's `known_share` is 1.
 * Binds the terms JSON as ?first, the tenant id as ?first+1.
 */
export function feedbackScoresSql(onlyChunks: string, first: number): string {
  const tenant = `?${first + 1}`;
  return `
  ${totalsCte(tenant)},
  feedback_terms(term, w, weight) AS MATERIALIZED (
    SELECT term, w, u * w / MAX(u * w) OVER () FROM (
      SELECT j.value ->> 0 AS phrase, j.value ->> 3 AS term, j.value ->> 5 AS u, MAX(ln((s.n - r.doc + 0.5) / (r.doc + 0.5)), 1e-6) AS w
      FROM json_each(?${first}) j CROSS JOIN chunks_fts_row r, keyword_totals s
      WHERE r.term = j.value ->> 3
      ORDER BY u * w DESC, phrase
      LIMIT ${FEEDBACK_TERMS})
  ),
  feedback_known(known) AS (SELECT COALESCE(SUM(w * weight), 0) FROM feedback_terms),
  feedback_scores(chunk_id, score) AS (
    SELECT f.doc, SUM(f.weight * f.w * ${saturated("f.f", "f.len")})
    FROM (
      SELECT v.doc, t.w, t.weight, SUM(${columnWeight}) AS f, c.fts_tokens AS len
      FROM feedback_terms t CROSS JOIN chunks_fts_instance v CROSS JOIN chunks c INDEXED BY chunks_postings
      WHERE v.term = t.term AND v.doc IN ${onlyChunks} AND c.id = v.doc AND c.tenant_id = ${tenant}
      GROUP BY t.term, v.doc
    ) f, keyword_totals s
    GROUP BY f.doc
  )`;
}
