import type { TenantScope } from "../../db/scope";
import {
  numbered,
  SEARCH_ROW_COLUMNS,
  type SearchFilters,
  type SearchRow,
  searchFilterSql,
} from "../search/search-rows";
import type { QueryInfo } from "./block-rank";
import type { KeywordRow, TimedRow } from "./lists";

/**
 * A search's second trip over posting blocks: the chunks the worker ranked (block-rank.ts) walked best first through
 * the filters, each chunk's and item's row read once, until `limit` pass. The order travels as a JSON array of chunk
 * ids, walked in its order (json_each drives the loop, and LIMIT stops it).
 */

/**
 * A walk's rows, kept where the walk read them (reading them again by id would count each row again); `onlyIf`, a
 * condition evaluated once before it (false: nothing is read).
 */
function walkSql(list: string, filterSql: string, limit: string, onlyIf = ""): string {
  return `SELECT j.key AS rank, ${SEARCH_ROW_COLUMNS} FROM json_each(${list}) j CROSS JOIN chunks c CROSS JOIN items i
    WHERE ${onlyIf}c.id = j.value AND i.id = c.item_id AND c.tenant_id = ?1 AND i.tenant_id = ?1${filterSql} LIMIT ${limit}`;
}

/**
 * The first `limit` chunks of the JSON list of ids `list` that pass the filters (`filterSql`, numbered), with their rows
 * and rank; ?1 is the tenant. Also run inside search's expansion statement (expansion.ts), whose sources they place.
 */
export function walkRowsSql(list: string, limit: string, filterSql: string): string {
  return `SELECT j.key AS rank, ${SEARCH_ROW_COLUMNS} FROM json_each(${list}) j CROSS JOIN chunks c CROSS JOIN items i
       WHERE c.id = j.value AND i.id = c.item_id AND c.tenant_id = ?1 AND i.tenant_id = ?1${filterSql}
       LIMIT ${limit}`;
}

/** The first `limit` chunks of `order` that pass the filters, with their rows (in `order`'s order). */
export function walkStatement(
  scope: TenantScope,
  order: number[],
  filters: SearchFilters,
  limit: number,
): D1PreparedStatement {
  const where = searchFilterSql(scope, filters);
  return scope.d1
    .prepare(walkRowsSql("?2", "?3", numbered(where.sql, 4)))
    .bind(scope.tenantId, JSON.stringify(order), limit, ...where.params);
}

/** A walk's rows as keyword hits, best first, scored as the worker scored them. */
export function walkedRows(
  rows: (SearchRow & { rank: number })[],
  scores: Map<number, number>,
  info: QueryInfo,
): KeywordRow[] {
  return rows
    .map((row) =>
      Object.assign(row, { bm25: scores.get(row.chunk_id)!, known: info.known, known_share: info.known_share }),
    )
    .sort((a, b) => b.bm25 - a.bm25 || a.chunk_id - b.chunk_id);
}

/**
 * The lists of a query that names a time (lists.ts, timedKeywordStatement), from ranked orders: `all` through the
 * filters, `then` through the filters and the time, and `plain` (the whole query's order) only when nothing written
 * then holds the words (then `then` walked every chunk found and kept none).
 */
export function timedWalkStatement(
  scope: TenantScope,
  orders: { terms: number[]; plain: number[] | null },
  filters: SearchFilters,
  during: SearchFilters,
  pool: number,
): D1PreparedStatement {
  const where = searchFilterSql(scope, filters);
  const then = searchFilterSql(scope, during);
  const whereSql = numbered(where.sql, 5);
  const thenSql = numbered(then.sql, 5 + where.params.length);
  const plain = orders.plain
    ? `,
  plain_w AS MATERIALIZED (${walkSql("?3", whereSql, "?4", "NOT EXISTS (SELECT 1 FROM then_w) AND ")})`
    : "";
  const plainBranch = orders.plain
    ? `
    UNION ALL SELECT 'plain', 0, plain_w.* FROM plain_w`
    : "";
  return scope.d1
    .prepare(
      `WITH all_w AS MATERIALIZED (${walkSql("?2", whereSql, "?4")}),
  then_w AS MATERIALIZED (${walkSql("?2", thenSql, "?4")})${plain}
  SELECT 'all' AS list, chunk_id IN (SELECT chunk_id FROM then_w) AS in_then, all_w.* FROM all_w
  UNION ALL SELECT 'then', 1, then_w.* FROM then_w WHERE chunk_id NOT IN (SELECT chunk_id FROM all_w)${plainBranch}`,
    )
    .bind(
      scope.tenantId,
      JSON.stringify(orders.terms),
      JSON.stringify(orders.plain ?? []),
      pool,
      ...where.params,
      ...then.params,
    );
}

/** A timed walk's rows as timedLists reads them (lists.ts): each list best first, scored as the worker scored it. */
export function timedWalkedRows(
  rows: (SearchRow & { list: TimedRow["list"]; rank: number; in_then: number })[],
  scored: { terms: Map<number, number>; plain: Map<number, number> | null },
  info: { terms: QueryInfo; plain: QueryInfo | null },
): TimedRow[] {
  return rows
    .map((row) => {
      const plain = row.list === "plain";
      const scores = plain ? scored.plain! : scored.terms;
      const i = plain ? info.plain! : info.terms;
      return Object.assign(row, { bm25: scores.get(row.chunk_id)!, known: i.known, known_share: i.known_share });
    })
    .sort((a, b) => (a.list < b.list ? -1 : a.list > b.list ? 1 : b.bm25 - a.bm25 || a.chunk_id - b.chunk_id));
}
