import { keywordCode, queryPhrases, storedTerm } from "../../shared/fts-text";
import { CONTEXT_WEIGHT, columnWeight, saturatedSql } from "./bm25";

/**
 * BM25 over the tenant's own keyword index (indexing.ts says why it is computed in SQL), as CTE lists
 * that statements embed: FTS5's formula (k1 = 1.2, b = 0.75, column weights content 1.0, context 0.5,
 * IDF floored at 1e-6) from the tenant's postings (`chunks_fts_instance`), chunk lengths
 * (chunks.fts_tokens) and totals (keyword_stats).
 *
 * The SQL holds only what the terms need (no CJK-phrase branch for a query without one, no weights for
 * the query's own terms): each shape is its own text to prepare (workerd keeps compiled statements by text; what
 * production D1 keeps is not documented), and preparing these lists costs about as much as running them, so SQL
 * that a query does not need is not free.
 */

/** [phrase index, position in phrase, phrase length, stored term, 1 if a legacy (unprefixed) term]. */
type TermRow = [number, number, number, string, 0 | 1];

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
      rows.push([phrase, pos, tokens.length, storedTerm(code, token), 0]);
      rows.push([phrase, pos, tokens.length, storedTerm("", token), 1]);
    });
  });
  return { json: JSON.stringify(rows), phrases: phrases.some((tokens) => tokens.length > 1) };
}

/**
 * A stored term's chunk count in the tenant, or null where it occurs in none: chunks_fts_row counts its postings (a
 * row or two read, and time in proportion to the word's chunks).
 */
export function chunkCountSql(term: string): string {
  // `term` is qualified by the caller's own alias: a bare name would be this table's own column.
  return `(SELECT r.doc FROM chunks_fts_row r WHERE r.term = ${term})`;
}

/**
 * A posting's chunk, looked up once by its rowid: its length (-1 for a chunk indexed before tenant terms, whose length
 * is unknown), or NULL where it is not the tenant's or fails `where` (SQL over `c`). A subquery reads the one row,
 * where a join would step on to the next. No narrower index: D1 bills a row read the same from either, and an index
 * would cost every chunk written a row more.
 */
function chunkLengthSql(doc: string, tenant: string, where: string): string {
  return `(SELECT COALESCE(c.fts_tokens, -1) FROM chunks c WHERE c.id = ${doc} AND c.tenant_id = ${tenant}${where})`;
}

/**
 * BM25's term frequency part with the tenant's average length as a constant subquery: evaluated once, where a join
 * with keyword_totals would read its row again for every posting (D1 bills each).
 */
const saturated = (f: string, len: string) => saturatedSql(f, len, "(SELECT avgdl FROM keyword_totals)");

/** `keyword_totals(n, avgdl)`: the tenant's chunk count and average length (one row, even for a tenant with none). */
export function keywordTotalsCte(tenant: string): string {
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
    SELECT h.phrase, h.doc, SUM(h.f), ${chunkLengthSql("h.doc", tenant, "")}
    FROM (
      SELECT t.phrase, v.doc, ${columnWeight} AS f
      FROM ${p}_terms t CROSS JOIN chunks_fts_instance v
      WHERE v.term = t.term AND t.size > 1
      GROUP BY t.phrase, v.doc, v.col, v."offset" - t.pos
      HAVING COUNT(*) = MAX(t.size)
    ) h
    GROUP BY h.phrase, h.doc`
    : "";
  const totals =
    options.totals === false
      ? ""
      : `${keywordTotalsCte(tenant)},
  `;
  // A chunk written before migration 0014 has no project: it passes here, and the walk checks its item.
  const inProjects = options.projects
    ? ` AND (c.project IN (SELECT value FROM json_each(?${options.projects})) OR c.project IS NULL)`
    : "";
  const length = (doc: string) => chunkLengthSql(doc, tenant, inProjects);
  // A longer phrase's documents are counted from its matches (tenant-wide, as the phrase branch is not limited to the projects).
  const phraseDf = terms.phrases
    ? `
      UNION ALL
      SELECT phrase, COUNT(*) FROM ${p}_freq WHERE len IS NOT NULL AND phrase IN (SELECT phrase FROM ${p}_terms WHERE size > 1) GROUP BY phrase`
    : "";
  // A tenant word's count (a phrase in no chunk counts null).
  const tenantDf = `SELECT t.phrase, ${chunkCountSql("t.term")} AS n FROM ${p}_terms t WHERE t.size = 1 AND t.legacy = 0`;
  return `
  ${totals}${p}_terms(phrase, pos, size, term, legacy) AS MATERIALIZED (
    SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4
    FROM json_each(?${options.terms ?? 1}) j
    WHERE (j.value ->> 4 = 0 OR EXISTS (SELECT 1 FROM chunks WHERE tenant_id = ${tenant} AND fts_tokens IS NULL))${onlyIf}
  ),
  -- Term frequencies per phrase and chunk (content counts 1, context ${CONTEXT_WEIGHT}), with the chunk's length.
  -- CROSS JOIN: the terms drive the lookups (one index seek per term); the other order would scan the whole index.
  -- Each chunk is looked up once per phrase, after its postings are summed (chunkLengthSql); a row whose length is
  -- NULL is not the tenant's or the projects', and readers skip it (filtering here would look the chunk up twice).
  ${p}_freq(phrase, doc, f, len) AS MATERIALIZED (
    SELECT t.phrase, v.doc, SUM(${columnWeight}), ${length("v.doc")}
    FROM ${p}_terms t CROSS JOIN chunks_fts_instance v
    WHERE v.term = t.term AND t.size = 1
    GROUP BY t.phrase, v.doc${phrases}
  ),
  -- Documents per phrase in the whole tenant: a tenant term's from chunks_fts_row (one seek), a legacy (shared) term's
  -- by counting the tenant's own postings.
  ${p}_df(phrase, df) AS MATERIALIZED (
    SELECT phrase, SUM(n) FROM (
      ${tenantDf}
      UNION ALL
      SELECT phrase, COUNT(*) FROM (
        SELECT t.phrase, v.doc, ${chunkLengthSql("v.doc", tenant, "")} AS len FROM ${p}_terms t CROSS JOIN chunks_fts_instance v
        WHERE t.legacy = 1 AND t.size = 1 AND v.term = t.term GROUP BY t.phrase, v.doc
      ) WHERE len IS NOT NULL GROUP BY phrase${phraseDf}
    ) GROUP BY phrase HAVING SUM(n) IS NOT NULL
  ),
  ${p}_idf(phrase, w, df) AS MATERIALIZED (
    SELECT d.phrase, MAX(COALESCE(ln((s.n - d.df + 0.5) / (d.df + 0.5)), 0.0), 1e-6), d.df
    FROM ${p}_df d, keyword_totals s
  ),
  ${p}_query_info(known, known_share) AS MATERIALIZED (
    SELECT COALESCE(SUM(i.w), 0),
           SUM(CASE WHEN i.df IS NULL THEN 0 ELSE ln(1 + (MAX(s.n - i.df, 0) + 0.5) / (i.df + 0.5)) END)
             / SUM(ln(1 + (MAX(s.n - COALESCE(i.df, 0), 0) + 0.5) / (COALESCE(i.df, 0) + 0.5)))
    FROM (SELECT DISTINCT phrase FROM ${p}_terms) p LEFT JOIN ${p}_idf i ON i.phrase = p.phrase, keyword_totals s
  ),
  -- Each phrase's IDF from one constant object (its 17 digits kept as text), not a lookup per posting.
  ${p}_ranked(chunk_id, score) AS MATERIALIZED (
    SELECT f.doc, SUM(((SELECT json_group_object(phrase, printf('%!.17g', w)) FROM ${p}_idf) ->> ('$."' || f.phrase || '"')) * ${saturated("f.f", "NULLIF(f.len, -1)")}) AS score
    FROM ${p}_freq f WHERE f.len IS NOT NULL
    GROUP BY f.doc HAVING score IS NOT NULL ORDER BY score DESC, f.doc
  )`;
}
