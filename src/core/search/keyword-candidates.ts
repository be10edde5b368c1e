import type { TenantScope } from "../../db/scope";
import { blockTerms } from "../keyword-index/block-read";
import { blockTimedRows, type PendingList, planBlockList } from "../keyword-index/block-search";
import {
  type KeywordRow,
  keywordStatement,
  type TimedRow,
  timedKeywordStatement,
  timedLists,
} from "../keyword-index/lists";
import { keywordQueryTerms } from "../keyword-index/scores";
import { parseDerived } from "../memory/derived";
import { type TimeRange, withoutTimeWords } from "./query-time";
import type { SearchFilters } from "./search-rows";
import { rowStatedTimes, statedMatch } from "./stated-times";

/** The keyword list, or, where its walk is still to run, the walk (search.ts runs it with its second trip). */
export type KeywordCandidates = { textQuery: string } & (
  | { rows: KeywordRow[]; pending?: undefined }
  | { rows?: undefined; pending: PendingList; readAll: () => Promise<KeywordRow[]> }
);

/** The keyword hits' chunk ids: the list's, or those its walk is expected to give. */
export function keywordIds(list: KeywordCandidates): number[] {
  return list.pending ? list.pending.expected : list.rows.map((row) => row.chunk_id);
}

/**
 * BM25 over the tenant's own keyword index (keyword-index/scores.ts): ranking depends on its data only. When
 * the query names a time, its time words are matched against the items' times instead of their text,
 * and the best hits from that time join the list (they may rank low on words alone); if nothing was
 * written then and no hit states that time, the words were about something else and the plain query's
 * hits are used. From posting blocks (keyword-index/block-search.ts) the list's first trip reads the words' blocks and
 * the winners' rows come in a second, which search makes with its own second trip where it can (a query that names a
 * time walks its lists at once); where the blocks cannot serve the query, one statement reads every posting.
 */
export async function keywordCandidates(
  scope: TenantScope,
  query: string,
  named: TimeRange | null,
  filters: SearchFilters,
  pool: number,
): Promise<KeywordCandidates> {
  // Posting blocks serve most searches (keyword-index/block-search.ts); where they cannot, every posting is read.
  const blocks = blockTerms(scope.tenantId, query);
  if (!named) {
    const plain = keywordQueryTerms(scope.tenantId, query);
    const readAll = async () =>
      plain === null ? [] : (await keywordStatement(scope, plain, filters, pool).all<KeywordRow>()).results;
    const listed = blocks && (await planBlockList(scope, blocks, filters, pool));
    if (listed)
      return Array.isArray(listed)
        ? { rows: listed, textQuery: query }
        : { pending: listed, readAll, textQuery: query };
    return { rows: await readAll(), textQuery: query };
  }
  const textQuery = withoutTimeWords(query, named);
  const terms = keywordQueryTerms(scope.tenantId, textQuery);
  if (terms === null) return { rows: [], textQuery };
  const during: SearchFilters = {
    ...filters,
    createdAfter: Math.max(filters.createdAfter ?? -Infinity, named.from),
    createdBefore: Math.min(filters.createdBefore ?? Infinity, named.to - 1),
  };
  const plain = keywordQueryTerms(scope.tenantId, query);
  const withPlain = textQuery !== query && plain !== null;
  const textBlocks = blockTerms(scope.tenantId, textQuery);
  const results =
    (textBlocks &&
      (!withPlain || blocks) &&
      (await blockTimedRows(scope, { terms: textBlocks, plain: withPlain ? blocks : null }, filters, during, pool))) ||
    (
      await timedKeywordStatement(
        scope,
        { terms, plain: withPlain ? plain : null },
        filters,
        during,
        pool,
      ).all<TimedRow>()
    ).results;
  const lists = timedLists(results, withPlain);
  // Something said then, or saying it happened then ("last night", said the next morning: stated-times.ts), makes the
  // date a time; otherwise its words were about something else.
  const statesThen = () =>
    lists.all.some((row) => statedMatch(rowStatedTimes(row, parseDerived(row.derived)), named) === 1);
  if (!lists.thenFound && lists.unchanged && !statesThen()) return { rows: lists.unchanged, textQuery: query };
  return { rows: [...lists.all, ...lists.thenExtra], textQuery };
}
