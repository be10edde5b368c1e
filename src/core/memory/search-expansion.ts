import type { TenantScope } from "../../db/scope";
import { indexTokens, queryPhrases, storedTerm } from "../shared/fts-text";
import { STOPWORDS } from "../shared/stopwords";
import { weightedKeywordTerms } from "./keyword-index";
import { SEARCH_ROW_COLUMNS, keywordStatement, searchFilterSql, type KeywordRow, type SearchFilters, type SearchRow } from "./search-rows";

/**
 * Search's second round trip: what the first hits point to, read in one D1 batch.
 * - Feedback: the words the best first hits share beyond the query (relevance feedback, RM3-like): a
 *   question about "Caroline's art" whose best hit speaks of her "painting" also finds the other
 *   paintings. Scored as a keyword query of the strongest FEEDBACK_TERMS words, weighted.
 * - Neighbours: the chunks next to a hit in reading order, up to two messages away in its conversation
 *   (or two chunks away in its document): the answer is often the turn after the one that matches.
 * - Links: items linked to a hit (link_resources, add_relationship on items, auto-links).
 */

/** First hits whose words feed back, and the most candidate words sent to D1 (it keeps the best by IDF). */
const FEEDBACK_DOCS = 3;
const FEEDBACK_CANDIDATES = 40;
/** Hits whose neighbours and links are read, and the most linked items read. */
export const EXPANSION_SOURCES = 20;
const MAX_LINKED = 50;
/** How far in reading order a neighbour may be (messages in a conversation, chunks in a document). */
export const NEIGHBOUR_REACH = 2;

export interface ExpansionRequest {
  /** The query as matched against text (time words taken out). */
  query: string;
  filters: SearchFilters;
  pool: number;
  /** The best first hits, best first (their text feeds back), with their scores. */
  feedbackFrom: { content: string; score: number }[];
  neighboursOf: number[];
  /** Item ids whose links are followed (none: links are not read). */
  linksOf: string[];
}

export interface Expansion {
  feedback: KeywordRow[];
  neighbours: (SearchRow & { source: number; distance: number })[];
  links: (SearchRow & { source: string; weight: number })[];
}

/** Reads feedback hits, neighbours and linked items in one batch (statements only for what is asked). */
export async function readExpansion(scope: TenantScope, request: ExpansionRequest): Promise<Expansion> {
  const where = searchFilterSql(scope, request.filters);
  const terms = feedbackTerms(request.feedbackFrom, request.query);
  const statements: D1PreparedStatement[] = [];
  if (terms.length > 0) statements.push(keywordStatement(scope, weightedKeywordTerms(scope.tenantId, terms), request.filters, request.pool, true));
  if (request.neighboursOf.length > 0) statements.push(aroundStatement(scope, request.neighboursOf, request.linksOf, where));
  const out: Expansion = { feedback: [], neighbours: [], links: [] };
  if (statements.length === 0) return out;
  const results = await scope.d1.batch<Record<string, unknown>>(statements);
  if (terms.length > 0) out.feedback = results.shift()!.results as KeywordRow[];
  for (const row of (results.shift()?.results ?? []) as AroundRow[]) {
    if (row.via === "neighbour") out.neighbours.push({ ...row, source: row.source!, distance: row.distance! });
    else out.links.push({ ...row, source: row.source_item!, weight: row.weight! });
  }
  return out;
}

type AroundRow = SearchRow & { via: "neighbour" | "link"; source: number | null; source_item: string | null; distance: number | null; weight: number | null };

/**
 * Candidate feedback words: those of the best hits' text that are not the query's own, not function
 * words and not bare numbers, each weighted by the hits' scores times its share of their text. D1 then
 * keeps the strongest by weight x IDF, so words every chunk uses ("thanks", "really") drop out.
 */
export function feedbackTerms(hits: { content: string; score: number }[], query: string): { token: string; weight: number }[] {
  const own = new Set((queryPhrases(query) ?? []).flat().map((t) => storedTerm("", t)));
  const weights = new Map<string, { token: string; weight: number }>();
  for (const hit of hits.slice(0, FEEDBACK_DOCS)) {
    const tokens = indexTokens(hit.content.toLowerCase());
    for (const token of tokens) {
      if (token.length < 2 || STOPWORDS.has(token) || /^\p{N}+$/u.test(token)) continue;
      const stem = storedTerm("", token);
      if (own.has(stem)) continue;
      const entry = weights.get(stem) ?? { token, weight: 0 };
      entry.weight += hit.score / tokens.length;
      weights.set(stem, entry);
    }
  }
  return [...weights.values()].sort((a, b) => b.weight - a.weight || (a.token < b.token ? -1 : 1)).slice(0, FEEDBACK_CANDIDATES);
}

/**
 * In one statement: chunks within NEIGHBOUR_REACH of each source in reading order (`via` 'neighbour',
 * the source chunk and the distance): other messages of its conversation by position (and other chunks
 * of its own message), or other chunks of its item; then the first chunk of each item linked to a
 * source's item, either direction (`via` 'link', the source item and the link's weight). CROSS JOIN
 * keeps the index order (source, then a range of positions; source item, then its links).
 */
function aroundStatement(scope: TenantScope, sources: number[], linksOf: string[], where: { sql: string; params: unknown[] }): D1PreparedStatement {
  const reach = NEIGHBOUR_REACH;
  const filters = numbered(where.sql, 4);
  return scope.d1
    .prepare(
      `WITH a AS (
         SELECT c.id AS source, c.item_id, c.chunk_index, i.conversation_id, i.position
         FROM chunks c CROSS JOIN items i
         WHERE c.tenant_id = ?1 AND c.id IN (SELECT value FROM json_each(?2)) AND i.id = c.item_id AND i.tenant_id = ?1),
       l(source_item, item_id, weight) AS (
         SELECT source_id, target_id, weight FROM links
         WHERE tenant_id = ?1 AND source_type = 'item' AND target_type = 'item' AND source_id IN (SELECT value FROM json_each(?3))
         UNION ALL
         SELECT target_id, source_id, weight FROM links
         WHERE tenant_id = ?1 AND target_type = 'item' AND source_type = 'item' AND target_id IN (SELECT value FROM json_each(?3)))
       SELECT 'neighbour' AS via, a.source, NULL AS source_item,
              CASE WHEN i.id = a.item_id THEN ABS(c.chunk_index - a.chunk_index) ELSE ABS(i.position - a.position) END AS distance, NULL AS weight, ${SEARCH_ROW_COLUMNS}
       FROM a CROSS JOIN items i CROSS JOIN chunks c
       WHERE a.conversation_id IS NOT NULL AND i.tenant_id = ?1 AND i.conversation_id = a.conversation_id
         AND i.position BETWEEN a.position - ${reach} AND a.position + ${reach}
         AND c.tenant_id = ?1 AND c.item_id = i.id AND c.id != a.source AND (i.id != a.item_id OR ABS(c.chunk_index - a.chunk_index) <= ${reach})${filters}
       UNION ALL
       SELECT 'neighbour', a.source, NULL, ABS(c.chunk_index - a.chunk_index), NULL, ${SEARCH_ROW_COLUMNS}
       FROM a CROSS JOIN chunks c CROSS JOIN items i
       WHERE a.conversation_id IS NULL AND c.tenant_id = ?1 AND c.item_id = a.item_id
         AND c.chunk_index BETWEEN a.chunk_index - ${reach} AND a.chunk_index + ${reach} AND c.id != a.source
         AND i.id = c.item_id${filters}
       UNION ALL
       SELECT * FROM (
         SELECT 'link', NULL, l.source_item, NULL, MAX(l.weight) AS weight, ${SEARCH_ROW_COLUMNS}
         FROM l CROSS JOIN items i CROSS JOIN chunks c
         WHERE i.tenant_id = ?1 AND i.id = l.item_id AND c.tenant_id = ?1 AND c.item_id = i.id AND c.chunk_index = 0${filters}
         GROUP BY l.source_item, c.id ORDER BY weight DESC, c.id LIMIT ${MAX_LINKED})`,
    )
    .bind(scope.tenantId, JSON.stringify(sources), JSON.stringify(linksOf), ...where.params);
}

/** The filter's anonymous `?` parameters numbered from `first`, so one list of values serves several branches. */
function numbered(sql: string, first: number): string {
  let n = first;
  return sql.replace(/\?/g, () => `?${n++}`);
}
