import type { TenantScope } from "../../db/scope";
import {
  type KeywordRow,
  keywordStatement,
  type TimedRow,
  timedKeywordStatement,
  timedLists,
} from "../keyword-index/lists";
import { keywordQueryTerms } from "../keyword-index/scores";
import { hasTopPostings, noteKeywordIndex } from "../keyword-index/tops";
import { parseDerived } from "../memory/derived";
import { type TimeRange, withoutTimeWords } from "./query-time";
import { type SearchFilters, searchedProjects } from "./search-rows";
import { rowStatedTimes, statedMatch } from "./stated-times";

/**
 * BM25 over the tenant's own keyword index (keyword-index/scores.ts): ranking depends on its data only. When
 * the query names a time, its time words are matched against the items' times instead of their text,
 * and the best hits from that time join the list (they may rank low on words alone); if nothing was
 * written then and no hit states that time, the words were about something else and the plain query's
 * hits are used. One round trip either way.
 */
export async function keywordCandidates(
  scope: TenantScope,
  query: string,
  named: TimeRange | null,
  filters: SearchFilters,
  pool: number,
): Promise<{ rows: KeywordRow[]; textQuery: string }> {
  const projects = searchedProjects(scope, filters);
  const tops = hasTopPostings(scope.tenantId, projects);
  // Each statement says what serves the search (keyword-index/tops.ts); an empty list says nothing, and the last word stands.
  const noted = <T extends { tops: number }>(rows: T[]) => {
    if (rows.length > 0) noteKeywordIndex(scope.tenantId, projects, rows[0]!.tops === 1);
    return rows;
  };
  // A query that names a time reads every posting (no top postings): its statement walks its list twice and may score
  // the whole query's list after, and with top postings' CTEs in it SQLite takes many times as long as without.
  const plain = keywordQueryTerms(scope.tenantId, query, tops && !named);
  if (!named)
    return {
      rows:
        plain === null ? [] : noted((await keywordStatement(scope, plain, filters, pool).all<KeywordRow>()).results),
      textQuery: query,
    };
  const textQuery = withoutTimeWords(query, named);
  const terms = keywordQueryTerms(scope.tenantId, textQuery);
  if (terms === null) return { rows: [], textQuery };
  const during: SearchFilters = {
    ...filters,
    createdAfter: Math.max(filters.createdAfter ?? -Infinity, named.from),
    createdBefore: Math.min(filters.createdBefore ?? Infinity, named.to - 1),
  };
  const withPlain = textQuery !== query && plain !== null;
  const results = noted(
    (
      await timedKeywordStatement(
        scope,
        { terms, plain: withPlain ? plain : null },
        filters,
        during,
        pool,
      ).all<TimedRow>()
    ).results,
  );
  const lists = timedLists(results, withPlain);
  // Something said then, or saying it happened then ("last night", said the next morning: stated-times.ts), makes the
  // date a time; otherwise its words were about something else.
  const statesThen = () =>
    lists.all.some((row) => statedMatch(rowStatedTimes(row, parseDerived(row.derived)), named) === 1);
  if (!lists.thenFound && lists.unchanged && !statesThen()) return { rows: lists.unchanged, textQuery: query };
  return { rows: [...lists.all, ...lists.thenExtra], textQuery };
}
