import type { TenantScope } from "../../db/scope";
import { indexTokens, keywordCode, queryPhrases, storedTerm } from "../../shared/fts-text";
import { STOPWORDS } from "../../shared/stopwords";
import { walkRowsSql } from "../keyword-index/block-walk";
import { chunkCountSql, keywordTotalsCte } from "../keyword-index/scores";
import { type FeedbackChunk, feedbackCandidates, feedbackScores } from "./feedback-scores";
import {
  exactReal,
  numbered,
  SEARCH_ROW_JSON,
  type SearchFilters,
  type SearchRow,
  searchFilterSql,
  searchRowFromJson,
  searchRowJsonOf,
} from "./search-rows";

/**
 * Search's second round trip: what the first hits point to, read in one statement beside the vector hits' rows.
 * - Neighbours: the chunks next to a hit in reading order, up to two messages away in its conversation
 *   (or two chunks away in its document): the answer is often the turn after the one that matches.
 * - Links: items linked to a hit (link_resources, add_relationship on items, auto-links).
 * - Feedback: the words the best first hits share beyond the query (relevance feedback, RM3-like): a
 *   question about "Caroline's art" whose best hit speaks of her "painting" also finds her other
 *   paintings. Scored as a keyword query of the strongest FEEDBACK_TERMS words, weighted, over the
 *   first hits and the chunks around them: scoring every chunk instead finds no more answers.
 */

/**
 * First hits whose words feed back, and the most candidate words whose counts D1 gives (the best by IDF are kept).
 * FEEDBACK_DOCS stays small: past 3, the benchmarks' figures move by a query or two either way, so a peak further
 * out is noise, not a better setting.
 */
const FEEDBACK_DOCS = 3;
const FEEDBACK_CANDIDATES = 40;
const MAX_LINKED = 50;
/** The relationship auto-linking writes between items (src/core/graph/auto-link.ts). */
const SIMILAR_CONTENT = "similar_content";
/** How far in reading order a neighbour may be (messages in a conversation, chunks in a document). */
export const NEIGHBOUR_REACH = 2;

export interface ExpansionRequest {
  /** The query as matched against text (time words taken out). */
  query: string;
  filters: SearchFilters;
  /** The best keyword hits, best first (their text feeds back), with their scores; none = no feedback. */
  feedbackFrom: { content: string; score: number }[];
  /**
   * Where the best hits are not read yet (posting blocks: keyword-index/block-search.ts): the chunks they are expected
   * to be, whose words (their forward index) get their chunk counts; `read` is then given the hits' text, and answers
   * null where a word of it was not among them.
   */
  feedbackChunks?: number[];
  /** Every first hit's chunk id (the caller holds their rows, or reads them in the same trip). */
  firstHits: number[];
  /**
   * First hits that may be sources: their neighbours and links are read, and the caller keeps those of the hits that
   * turn out to be sources (narrowExpansion). A source's row where the caller holds it, else its chunk id alone.
   */
  sources: (NeighbourSource | number)[];
  /**
   * The keyword list's walk (keyword-index/block-walk.ts), where the caller runs it in this statement: the ids it is
   * given and the rows it stops at. Its rows are sources besides `sources` (placed by the walk, where placing them again
   * would read their rows a second time), and come back with `walked`.
   */
  walk?: { order: number[]; limit: number };
  /** Whether neighbours in reading order are read, and links followed. */
  neighbours: boolean;
  links: boolean;
  /**
   * What a `similar_content` link (auto-link, auto_link_document) counts for, 0..1: such a link is the
   * embedder's judgement, so it counts as much as the embedder's own evidence (the vector weight).
   */
  similarLinkWeight: number;
}

/** What finding a hit's neighbours needs of its row: where it sits in its conversation or document. */
export type NeighbourSource = Pick<SearchRow, "chunk_id" | "item_id" | "chunk_index" | "conversation_id" | "position">;

export interface Expansion {
  /** Feedback scores of first hits and of the chunks around them, by chunk id. */
  feedback: Map<number, { bm25: number; known: number; known_share: number }>;
  neighbours: { chunkId: number; source: number; distance: number }[];
  /** Linked chunks, strongest first (weight, then chunk id). */
  links: { chunkId: number; source: string; weight: number }[];
  /** The rows of chunks around that are not first hits (the caller holds those), one each. */
  rows: Map<number, SearchRow>;
}

export const emptyExpansion = (): Expansion => ({ feedback: new Map(), neighbours: [], links: [], rows: new Map() });

/** The expansion's statement, to run in the caller's round trip, and how to read its answer. */
export interface ExpansionRead {
  statement: D1PreparedStatement;
  /**
   * `candidates`: every first hit's row (feedback scores them with the chunks around); `feedbackFrom`, with
   * `feedbackChunks`, the best hits' text (null: a word's count was not read); `held`, rows the caller read beside the
   * statement of chunks it named first hits that are not (a trip made ahead for more hits than came).
   */
  read(
    result: D1Result<unknown>,
    candidates: Iterable<FeedbackChunk & { chunk_id: number }>,
    feedbackFrom?: { content: string; score: number }[],
    held?: Map<number, SearchRow>,
  ): Expansion | null;
  /** The walk's rows (`walk`), with their rank in its order. */
  walked(result: D1Result<unknown>): (SearchRow & { rank: number })[];
}

/**
 * The statement that reads the chunks around the sources, answered as one row of JSON values (search-rows.ts:
 * D1 charges by value): how chunks relate to sources, each with the chunk's row, read where the chunk is found; and
 * each candidate feedback word's chunk count with the tenant's totals. A chunk next to several sources comes with its
 * row each time: D1 counts every row of a table the statement builds and reads, so scanning the chunks around again
 * to give each row once costs more than reading it again. Feedback then scores the first hits and the chunks around
 * from their rows (feedback-scores.ts). Null when there is nothing to read.
 */
export function expansionRead(scope: TenantScope, request: ExpansionRequest): ExpansionRead | null {
  const ahead = request.feedbackChunks;
  const words = ahead ? [] : feedbackCandidates(scope.tenantId, feedbackTerms(request.feedbackFrom, request.query));
  const walk = request.walk;
  const follows = (request.sources.length > 0 || !!walk) && (request.neighbours || request.links);
  if (!walk && !follows && words.length === 0 && !ahead?.length) return null;
  const where = searchFilterSql(scope, request.filters);
  const sources = request.sources.map((r) =>
    typeof r === "number" ? [r] : [r.chunk_id, r.item_id, r.chunk_index, r.conversation_id, r.position],
  );
  const wordsParam = 3 + where.params.length;
  const walkParam = wordsParam + (ahead ? 2 : 1);
  const walkCte = walk
    ? `w AS MATERIALIZED (${walkRowsSql(`?${walkParam}`, `?${walkParam + 1}`, numbered(where.sql, 3))}),\n  `
    : "";
  const statement = scope.d1
    .prepare(
      `WITH ${walkCte}${aroundCte(where.sql, follows ? request : { ...request, sources: [], walk: undefined })},
       ${keywordTotalsCte("?1")}
       SELECT${walk ? `\n         (SELECT json_group_array(json_array(w.rank, ${searchRowJsonOf("w")})) FROM w) AS walked,` : ""}
         (SELECT json_group_array(json_array(via, source, source_item, distance, ${exactReal("weight")}, chunk_id, json(row))) FROM around) AS around,
         ${ahead ? stemCountsSql(wordsParam) : `(SELECT json_group_array(json_array(j.key, ${chunkCountSql("j.value")})) FROM json_each(?${wordsParam}) j)`} AS dfs,
         n, avgdl
       FROM keyword_totals`,
    )
    .bind(
      scope.tenantId,
      JSON.stringify(sources),
      ...where.params,
      JSON.stringify(ahead ?? words.map((w) => w.term)),
      ...(ahead ? [keywordCode(scope.tenantId)] : []),
      ...(walk ? [JSON.stringify(walk.order), walk.limit] : []),
    );
  return {
    statement,
    walked(result) {
      const packed = result.results[0] as PackedExpansion;
      return (JSON.parse(packed.walked ?? "[]") as [number, unknown[]][]).map(([rank, values]) =>
        Object.assign(searchRowFromJson(values), { rank }),
      );
    },
    read(result, candidates, feedbackFrom, held) {
      const out = emptyExpansion();
      const packed = result.results[0] as PackedExpansion | undefined;
      if (!packed) return out;
      const around = JSON.parse(packed.around) as AroundRow[];
      const rows = new Map<number, unknown[]>();
      for (const [via, source, sourceItem, distance, weight, chunkId, values] of around) {
        rows.set(chunkId, values);
        if (via === "neighbour") out.neighbours.push({ chunkId, source: source!, distance: distance! });
        else out.links.push({ chunkId, source: sourceItem!, weight: Number(weight) });
      }
      out.links.sort(strongestFirst);
      const first = [...candidates];
      const firstIds = new Set(first.map((c) => c.chunk_id));
      for (const [chunkId, values] of rows) {
        // A first hit's row is the caller's; a row the caller read beside (held) is the one it holds.
        if (firstIds.has(chunkId) || out.rows.has(chunkId)) continue;
        out.rows.set(chunkId, held?.get(chunkId) ?? searchRowFromJson(values));
      }
      // Feedback scores the first hits and the chunks around them: every kept word occurs, so the whole query is known.
      let kept = words;
      const dfs: (number | null)[] = words.map(() => null);
      if (ahead) {
        kept = feedbackCandidates(scope.tenantId, feedbackTerms(feedbackFrom ?? [], request.query));
        const counts = JSON.parse(packed.dfs) as Record<string, number | null>;
        for (const [i, word] of kept.entries()) {
          if (!(word.key in counts)) return null;
          dfs[i] = counts[word.key]!;
        }
      } else for (const [index, df] of JSON.parse(packed.dfs) as [number, number | null][]) dfs[index] = df;
      const feedback = feedbackScores(scope.tenantId, kept, dfs, packed, [...first, ...out.rows.values()]);
      for (const [chunkId, bm25] of feedback.scores)
        out.feedback.set(chunkId, { bm25, known: feedback.known, known_share: 1 });
      return out;
    },
  };
}

/**
 * The expansion of the hits that are sources, out of one read for more: their neighbours, and the strongest
 * MAX_LINKED links of their items (the statement keeps each item's strongest MAX_LINKED, which holds them).
 */
export function narrowExpansion(expansion: Expansion, sources: NeighbourSource[]): Expansion {
  const chunks = new Set(sources.map((s) => s.chunk_id));
  const items = new Set(sources.map((s) => s.item_id));
  return {
    ...expansion,
    neighbours: expansion.neighbours.filter((n) => chunks.has(n.source)),
    links: expansion.links.filter((l) => items.has(l.source)).slice(0, MAX_LINKED),
  };
}

const strongestFirst = (a: { weight: number; chunkId: number }, b: { weight: number; chunkId: number }) =>
  b.weight - a.weight || a.chunkId - b.chunkId;

/**
 * The chunk counts of every word in the forward index of the chunks in parameter `chunks` (JSON array of ids), as a
 * JSON object by forward index key (term-freqs.ts; the tenant's code, the next parameter, makes the stored term).
 */
function stemCountsSql(chunks: number): string {
  const key = "CASE WHEN instr(w.value, ':') > 0 THEN substr(w.value, 1, instr(w.value, ':') - 1) ELSE w.value END";
  return `(SELECT json_group_object(s.key, (SELECT r.doc FROM chunks_fts_row r WHERE r.term = ?${chunks + 1} || CASE s.key WHEN '~' THEN '' ELSE s.key END))
    FROM (SELECT DISTINCT ${key} AS key
          FROM json_each(?${chunks}) j CROSS JOIN chunks c CROSS JOIN json_each('["' || replace(trim(c.term_freqs), ' ', '","') || '"]') w
          WHERE c.id = j.value AND c.tenant_id = ?1 AND w.value <> '') s)`;
}

/**
 * readExpansion's one row: the walk's rows where it ran here, two JSON arrays (the last, each candidate feedback word's
 * chunk count), and the tenant's totals.
 */
type PackedExpansion = { walked?: string; around: string; dfs: string; n: number; avgdl: number };
/** [via, source chunk, source item, distance, weight (exactReal), chunk id, the chunk's row (SEARCH_ROW_JSON)]. */
type AroundRow = ["neighbour" | "link", number | null, string | null, number | null, string | null, number, unknown[]];

/**
 * Candidate feedback words: those of the best hits' text that are not the query's own, not function
 * words and not bare numbers, each weighted by the hits' scores times its share of their text. D1 then
 * keeps the strongest by weight x IDF, so words every chunk uses ("thanks", "really") drop out.
 */
export function feedbackTerms(
  hits: { content: string; score: number }[],
  query: string,
): { token: string; weight: number }[] {
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
  return [...weights.values()]
    .sort((a, b) => b.weight - a.weight || (a.token < b.token ? -1 : 1))
    .slice(0, FEEDBACK_CANDIDATES);
}

/**
 * `around(via, source, source_item, distance, weight, chunk_id, row)`: chunks within NEIGHBOUR_REACH of each
 * source chunk in reading order ('neighbour', with the distance): other messages of its conversation by
 * position (and other chunks of its own message), or other chunks of its item; then the first chunk of
 * each item linked to a source item, either direction ('link', with the link's weight), each source item's
 * strongest MAX_LINKED. Filtered like the search. A source given by its id alone is placed from its row here.
 * CROSS JOIN keeps the index order (each source, then a range of positions; source item, then its links):
 * with `tenant_id = ? AND id IN (list)` SQLite, having no statistics, would rather walk every chunk of the
 * tenant. Only the parts the request needs are written (neighbours, links): an unused part costs its planning
 * wherever the text is prepared (workerd keeps compiled statements by text).
 * Parameters: ?1 tenant, ?2 sources (JSON [chunk id, item id, chunk index, conversation id, position], or
 * [chunk id]), then the filter's from ?3 (the caller's last ones follow them).
 */
function aroundCte(filterSql: string, request: ExpansionRequest): string {
  const reach = NEIGHBOUR_REACH;
  const filters = numbered(filterSql, 3);
  const parts: string[] = [];
  const ctes: string[] = [];
  const placed = request.sources.filter((r) => typeof r !== "number");
  const unplaced = request.sources.length > placed.length;
  const hasSources = request.sources.length > 0 || !!request.walk;
  if (hasSources) {
    const from: string[] = [];
    if (request.walk) from.push("SELECT chunk_id, item_id, chunk_index, conversation_id, position FROM w");
    if (placed.length > 0)
      from.push(`SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4
    FROM json_each(?2) j WHERE json_array_length(j.value) > 1`);
    if (unplaced)
      from.push(`SELECT c.id, c.item_id, c.chunk_index, i.conversation_id, i.position
    FROM json_each(?2) j CROSS JOIN chunks c CROSS JOIN items i
    WHERE json_array_length(j.value) = 1 AND c.id = j.value ->> 0 AND c.tenant_id = ?1 AND i.id = c.item_id AND i.tenant_id = ?1`);
    // Over the walk's rows, each pass reads them from its table: making another of them would add a pass.
    ctes.push(`a(source, item_id, chunk_index, conversation_id, position) AS ${request.walk ? "NOT " : ""}MATERIALIZED (
    ${from.join("\n    UNION ALL\n    ")})`);
  }
  if (request.neighbours && hasSources) {
    // One pass over the sources for messages' and documents' neighbours alike: D1 counts each pass over `a`. A message's
    // neighbours are the items around its position, a document chunk's are its own item's; of the source's own item,
    // only chunks within reach.
    const own = (then: string, otherwise: string) => `CASE WHEN i.id = a.item_id THEN ${then} ELSE ${otherwise} END`;
    parts.push(`SELECT 'neighbour', a.source, NULL, ${own("ABS(c.chunk_index - a.chunk_index)", "ABS(i.position - a.position)")}, NULL, c.id, ${SEARCH_ROW_JSON}
    FROM a CROSS JOIN items i CROSS JOIN chunks c
    WHERE ((a.conversation_id IS NOT NULL AND i.tenant_id = ?1 AND i.conversation_id = a.conversation_id
        AND i.position BETWEEN a.position - ${reach} AND a.position + ${reach})
      OR (a.conversation_id IS NULL AND i.tenant_id = ?1 AND i.id = a.item_id))
      AND c.tenant_id = ?1 AND c.item_id = i.id
      AND c.chunk_index BETWEEN ${own(`a.chunk_index - ${reach}`, "0")} AND ${own(`a.chunk_index + ${reach}`, String(Number.MAX_SAFE_INTEGER))}
      AND c.id != a.source${filters}`);
  }
  if (request.links && hasSources) {
    // A number from configuration (never user input), clamped, so the statement text is one per deployment.
    const similar = Math.min(1, Math.max(0, request.similarLinkWeight));
    const linkWeight = `weight * (CASE WHEN relationship_type = '${SIMILAR_CONTENT}' THEN ${similar} ELSE 1 END)`;
    const skipSimilar = similar === 0 ? ` AND relationship_type <> '${SIMILAR_CONTENT}'` : "";
    // Each source's links, both ways, in one pass over the sources (D1 counts each pass): gathered as a JSON list on the
    // source's row, their weights as exact text (exactReal).
    const linked = (other: string, end: string) =>
      `SELECT ${other} AS other, ${exactReal(linkWeight)} AS w FROM links
        WHERE tenant_id = ?1 AND ${end}_type = 'item' AND ${end}_id = a.item_id AND ${end === "source" ? "target" : "source"}_type = 'item'${skipSimilar}`;
    ctes.push(`l(source_item, item_id, weight) AS (
    SELECT a.item_id, j.value ->> 0, CAST(j.value ->> 1 AS REAL) FROM a CROSS JOIN json_each((
      SELECT json_group_array(json_array(other, w)) FROM (${linked("target_id", "source")}
        UNION ALL ${linked("source_id", "target")}))) j)`);
    parts.push(`SELECT 'link', NULL, source_item, NULL, weight, chunk_id, row FROM (
      SELECT l.source_item, MAX(l.weight) AS weight, c.id AS chunk_id, ${SEARCH_ROW_JSON} AS row,
        ROW_NUMBER() OVER (PARTITION BY l.source_item ORDER BY MAX(l.weight) DESC, c.id) AS strength_rank
      FROM l CROSS JOIN items i CROSS JOIN chunks c
      WHERE i.tenant_id = ?1 AND i.id = l.item_id AND c.tenant_id = ?1 AND c.item_id = i.id AND c.chunk_index = 0${filters}
      GROUP BY l.source_item, c.id)
    WHERE strength_rank <= ${MAX_LINKED}`);
  }
  if (parts.length === 0) parts.push("SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0");
  ctes.push(`around(via, source, source_item, distance, weight, chunk_id, row) AS (
    ${parts.join("\n    UNION ALL\n    ")})`);
  return ctes.join(",\n  ");
}
