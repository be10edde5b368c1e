import type { TenantScope } from "../../db/scope";
import {
  numbered,
  SEARCH_ROW_COLUMNS,
  type SearchFilters,
  type SearchRow,
  searchedProjects,
  searchFilterSql,
} from "../search/search-rows";
import { type QueryTerms, queryScoresSql } from "./scores";

/** A keyword hit: its row, its BM25 and what the absolute score needs (scores.ts). */
export type KeywordRow = SearchRow & { bm25: number; known: number; known_share: number };

/** A list's `known` and `known_share` as constant subqueries: a join would read their row again for every hit. */
function queryInfoSql(prefix: string): string {
  return `(SELECT known FROM ${prefix}_query_info) AS known, (SELECT known_share FROM ${prefix}_query_info) AS known_share`;
}

/** A list's chunks (`s`, their id in column `id`) with their chunk and item rows, through the filters. */
function passingSql(list: string, filterSql: string, id = "chunk_id"): string {
  return `FROM ${list} s CROSS JOIN chunks c CROSS JOIN items i
    WHERE c.id = s.${id} AND i.id = c.item_id AND c.tenant_id = ?2 AND i.tenant_id = ?2${filterSql}`;
}

/** The walk over a ranked list: the first `pool` chunks (ids and scores) that pass the filters, best first. */
function walkSql(ranked: string, filterSql: string, pool: string): string {
  return `SELECT s.chunk_id, s.score ${passingSql(ranked, filterSql)}
    ORDER BY s.score DESC, s.chunk_id LIMIT ${pool}`;
}

/**
 * BM25 over the tenant's own keyword index (scores.ts), best first, through the filters. The
 * scores are sorted once (numbers only) and walked best first: the chunk and item rows are read, and the
 * filters tested, only until `pool` chunks pass, not for every chunk that shares a word with the query
 * (the materialized order serves the ORDER BY, so SQLite stops at the LIMIT).
 */
export function keywordStatement(
  scope: TenantScope,
  terms: QueryTerms,
  filters: SearchFilters,
  pool: number,
): D1PreparedStatement {
  const where = searchFilterSql(scope, filters);
  const projects = searchedProjects(scope, filters);
  const projectsParam = projects ? 4 + where.params.length : undefined;
  return scope.d1
    .prepare(
      `WITH ${queryScoresSql(terms, { projects: projectsParam })}
       SELECT ${SEARCH_ROW_COLUMNS}, s.score AS bm25, ${queryInfoSql("keyword")}
       FROM keyword_ranked s CROSS JOIN chunks c CROSS JOIN items i
       WHERE c.id = s.chunk_id AND i.id = c.item_id AND c.tenant_id = ?2 AND i.tenant_id = ?2${numbered(where.sql, 3)}
       ORDER BY s.score DESC, s.chunk_id LIMIT ?${3 + where.params.length}`,
    )
    .bind(terms.json, scope.tenantId, ...where.params, pool, ...(projects ? [JSON.stringify(projects)] : []));
}

/** The lists of a query that names a time (search.ts, keywordCandidates). */
export interface TimedLists {
  /** The query without its time words, through the filters. */
  all: KeywordRow[];
  /** Hits of the same words written during the time that `all` does not hold, best first. */
  thenExtra: KeywordRow[];
  /** Whether anything written during the time matched the words (in `all` or not). */
  thenFound: boolean;
  /** The whole query's own list (time words as words), read only when nothing was written then; null without `plain`. */
  unchanged: KeywordRow[] | null;
}

/**
 * The keyword lists of a query that names a time, in one statement: the words without the time words
 * are scored once and walked twice, through the filters (`all`) and through the filters and the time
 * (`then`); the whole query's words (`plain`, when they differ) are scored only when nothing written
 * then matched (their terms are empty otherwise, so their list costs nothing). A statement per list
 * would score its words again, where two lists share theirs. `then` rows that `all` holds come as a
 * mark on `all`'s row.
 */
export function timedKeywordStatement(
  scope: TenantScope,
  lists: { terms: QueryTerms; plain: QueryTerms | null },
  filters: SearchFilters,
  during: SearchFilters,
  pool: number,
): D1PreparedStatement {
  const where = searchFilterSql(scope, filters);
  const then = searchFilterSql(scope, during);
  const poolParam = `?${4 + where.params.length + then.params.length}`;
  const projects = searchedProjects(scope, filters);
  const projectsParam = projects ? 5 + where.params.length + then.params.length : undefined;
  const whereSql = numbered(where.sql, 4);
  const thenSql = numbered(then.sql, 4 + where.params.length);
  // Whether anything written then matched: read from the term frequencies, which hold the scored list's chunks (every
  // phrase with postings has an IDF), not from the walks or the scored list, since every reference to a CTE makes
  // SQLite plan the CTEs it reads again, and the plain list's terms (where this stands) are read ~5 times: the
  // frequencies' chain is the shortest, so the statement prepares and runs faster than with the scored list here.
  const thenFound = `SELECT 1 ${passingSql("(SELECT doc FROM keyword_freq WHERE len IS NOT NULL)", thenSql, "doc")}`;
  const plain = lists.plain
    ? `,
  ${queryScoresSql(lists.plain, { terms: 3, prefix: "plain", totals: false, onlyIf: `NOT EXISTS (${thenFound})`, projects: projectsParam })},
  plain_walked AS MATERIALIZED (${walkSql("plain_ranked", whereSql, poolParam)})`
    : "";
  // Each list is read once, and the marks come from window functions over them: SQLite plans a CTE's whole chain (its
  // list's CTEs) again at every reference, so a branch per list, each testing the others', would plan each chain
  // several times over.
  const plainBranch = lists.plain
    ? `
         UNION ALL
         SELECT 'plain', p.chunk_id, p.score, ${queryInfoSql("plain")}, 0, 0 FROM plain_walked p`
    : "";
  return scope.d1
    .prepare(
      `WITH ${queryScoresSql(lists.terms, { projects: projectsParam })},
  walked(list, chunk_id, score) AS MATERIALIZED (
    SELECT 'all', * FROM (${walkSql("keyword_ranked", whereSql, poolParam)})
    UNION ALL
    SELECT 'then', * FROM (${walkSql("keyword_ranked", thenSql, poolParam)})
  )${plain}
  SELECT h.list, ${SEARCH_ROW_COLUMNS}, h.score AS bm25, h.known, h.known_share, h.in_then
  FROM (
    SELECT w.list, w.chunk_id, w.score, ${queryInfoSql("keyword")},
           MAX(w.list = 'then') OVER (PARTITION BY w.chunk_id) AS in_then, MAX(w.list = 'all') OVER (PARTITION BY w.chunk_id) AS in_all
    FROM walked w${plainBranch}
  ) h CROSS JOIN chunks c CROSS JOIN items i
  WHERE c.id = h.chunk_id AND i.id = c.item_id AND NOT (h.list = 'then' AND h.in_all)
  ORDER BY h.list, h.score DESC, h.chunk_id`,
    )
    .bind(
      lists.terms.json,
      scope.tenantId,
      lists.plain?.json ?? "[]",
      ...where.params,
      ...then.params,
      pool,
      ...(projects ? [JSON.stringify(projects)] : []),
    );
}

/** A row of `timedKeywordStatement`: which list it belongs to, and for `all`, whether `then` holds it too. */
export type TimedRow = KeywordRow & { list: "all" | "then" | "plain"; in_then: number };

/** The rows of `timedKeywordStatement`, split into its lists. */
export function timedLists(rows: TimedRow[], plain: boolean): TimedLists {
  // The rows keep their two extra fields: copying each row without them (object rest) shows in a time-naming search's
  // worker time, and the extra fields harm nothing.
  const of = (list: string): KeywordRow[] => rows.filter((r) => r.list === list);
  const all = of("all");
  const thenExtra = of("then");
  return {
    all,
    thenExtra,
    thenFound: thenExtra.length > 0 || rows.some((r) => r.list === "all" && r.in_then === 1),
    unchanged: plain ? of("plain") : null,
  };
}
