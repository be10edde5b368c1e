import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
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
import { readExpansion } from "./expansion";
import { pairShare, queryPairs } from "./proximity";
import { queryContext } from "./query-context";
import { queryTimeRange, type TimeRange, withoutTimeWords } from "./query-time";
import {
  DEFAULT_CHANCE_SIMILARITY,
  eitherEvidence,
  FEEDBACK_WEIGHT,
  fusedScore,
  keywordPart,
  keywordStrength,
  LINK_WEIGHT,
  MIN_RELEVANCE,
  NEIGHBOUR_WEIGHT,
  PROXIMITY_WEIGHT,
  vectorPart,
} from "./relevance";
import { rerankTop } from "./rerank";
import { type SearchFilters, type SearchRow, searchedProjects } from "./search-rows";
import type { SearchHit, SearchMode, SearchOptions } from "./search-types";
import { fillMissingSimilarities, noVectorHits, vectorHits } from "./search-vectors";
import { statedMatch, statedTimes } from "./stated-times";

export type { SearchFilters, SearchHit, SearchMode, SearchOptions };

/**
 * Vector-part weight when HYBRID_VECTOR_WEIGHT is unset. A lexical embedder repeats the BM25 signal
 * with more noise: every weight above 0 that was tried ranks worse than the keyword part alone. So with
 * the local embedder the vector part does not count.
 */
const DEFAULT_VECTOR_WEIGHT = { semantic: 1, lexical: 0 };
/**
 * Candidates each list yields, whatever the limit: the stages reorder them, so a small limit must not
 * starve them.
 */
const MIN_CANDIDATES = 80;
const MAX_CANDIDATES = 100;

type Candidate = {
  row: SearchRow;
  bm25: number;
  /**
   * The match uncapped plus relevance feedback uncapped, times the query context's multiplier: orders hits that all
   * score 1. Feedback counts here too, or it could not reorder them: on short passages most top hits score 1, and a
   * capped score leaves them tied.
   */
  strength: number;
  /** The match parts: keyword, relevance feedback (capped, and uncapped), and the fused match (keyword and vector). */
  keyword: number;
  feedback: number;
  feedbackStrength: number;
  match: number;
  keywordRank: number | null;
  vectorRank: number | null;
  similarity: number | null;
  /** The hit's own evidence (match, feedback, time, speaker), then with its neighbours' and links'. */
  own: number;
  score: number;
  /** Held at the lead's score and strength (keepLeadFirst): ranks after the lead where both are equal. */
  belowLead: boolean;
};

/**
 * Retrieval in two round trips, every hit scored on an absolute scale (relevance.ts):
 * 1. FTS5 BM25 and vector lists over chunks (a date in the query is matched against the items' times
 *    instead of their words);
 * 2. what the first hits point to (expansion.ts): feedback words, neighbours in reading order,
 *    linked items, which add their evidence.
 * Hits below MIN_RELEVANCE are dropped, so a query that nothing in the project answers gets no hits.
 * Every statement filters on the scope's tenant; stashed items are excluded unless `tiers` asks.
 */
export async function searchChunks(
  scope: TenantScope,
  services: Services,
  query: string,
  filters: SearchFilters,
  limit: number,
  options: SearchOptions = {},
): Promise<SearchHit[]> {
  const mode = options.mode ?? "hybrid";
  let queryVector: Promise<Float32Array | null> | null = options.queryVector
    ? Promise.resolve(options.queryVector)
    : null;
  const embedQuery = () => (queryVector ??= services.embedder.embed([query], "query").then((v) => v[0] ?? null));
  const stages = services.config.searchStages;
  const named = stages.has("time") ? queryTimeRange(query, options.now ?? Date.now()) : null;
  const pool = Math.min(MAX_CANDIDATES, Math.max(MIN_CANDIDATES, limit * 4));
  const kind = services.embedder.semantic ? "semantic" : "lexical";
  const vectorWeight =
    mode === "vector"
      ? 1
      : mode === "keyword"
        ? 0
        : (services.config.hybridVectorWeight ?? DEFAULT_VECTOR_WEIGHT[kind]);
  const chance = services.config.embeddingChanceSimilarity ?? DEFAULT_CHANCE_SIMILARITY[kind];
  let vectorFailed = false;
  const vectorUnavailable = (error: unknown) => {
    if (!vectorFailed) options.onVectorUnavailable?.(error instanceof Error ? error.message : String(error));
    vectorFailed = true;
  };
  const keywordList =
    mode !== "vector"
      ? keywordCandidates(scope, query, named, filters, pool)
      : Promise.resolve({ rows: [], textQuery: query });
  const [keyword, vector] = await Promise.all([
    keywordList,
    vectorWeight > 0
      ? vectorHits(
          scope,
          services,
          embedQuery,
          filters,
          pool,
          keywordList.then((k) => k.rows.map((row) => row.chunk_id)).catch(() => null), // its failure fails the search
          vectorUnavailable,
        ).catch((error: unknown) => {
          vectorUnavailable(error);
          return noVectorHits();
        })
      : noVectorHits(),
  ]);
  const candidates = new Map<number, Candidate>();
  const candidate = (row: SearchRow) => {
    let entry = candidates.get(row.chunk_id);
    if (!entry) {
      entry = {
        row,
        bm25: 0,
        strength: 0,
        keyword: 0,
        feedback: 0,
        feedbackStrength: 0,
        match: 0,
        keywordRank: null,
        vectorRank: null,
        similarity: null,
        own: 0,
        score: 0,
        belowLead: false,
      };
      candidates.set(row.chunk_id, entry);
    }
    return entry;
  };
  const textQuery = keyword.textQuery;
  keyword.rows.forEach((row, rank) =>
    Object.assign(candidate(row), {
      bm25: row.bm25,
      keyword: keywordPart(row.bm25, row.known, row.known_share),
      strength: keywordStrength(row.bm25, row.known, row.known_share),
      keywordRank: rank + 1,
    }),
  );
  vector.rows.forEach(({ row, similarity }, rank) =>
    Object.assign(candidate(row), { vectorRank: rank + 1, similarity }),
  );
  const first = [...candidates.values()];
  // A keyword hit outside the vector list still has a cosine, read from its stored vector (search-vectors.ts).
  for (const c of first) if (c.similarity === null) c.similarity = vector.keywordCosines.get(c.row.chunk_id) ?? null;
  // Proximity: a keyword hit holding the query's words side by side, as the query says them, matches it more closely.
  // It raises the keyword part before fusion: word order says nothing about the vector part.
  const pairs = mode !== "vector" && stages.has("proximity") ? queryPairs(scope.tenantId, textQuery) : null;
  for (const c of first) {
    const vectorScore = vectorPart(c.similarity, chance);
    const gain =
      pairs && c.keyword > 0 ? 1 + PROXIMITY_WEIGHT * pairShare(pairs, c.row.chunk_content, c.row.term_freqs) : 1;
    c.match = mode === "vector" ? vectorScore : fusedScore(Math.min(1, c.keyword * gain), vectorScore, vectorWeight);
    c.strength = mode === "vector" ? vectorScore : fusedScore(c.strength * gain, vectorScore, vectorWeight);
  }

  const context = queryContext(
    query,
    named,
    first.map((c) => c.row),
    stages,
  );
  const sources = first
    .map((c) => ({ c, own: Math.min(1, c.match * context.multiplier(c.row)) }))
    .filter((s) => s.own >= MIN_RELEVANCE)
    .sort((a, b) => b.own - a.own || a.c.row.chunk_id - b.c.row.chunk_id)
    .map((s) => s.c);
  if (sources.length > 0) {
    const expansion = await readExpansion(scope, {
      query: textQuery,
      filters,
      feedbackFrom: mode === "vector" || !stages.has("feedback") ? [] : feedbackSources(first),
      candidates: first.map((c) => c.row),
      neighboursOf: stages.has("neighbours") ? sources.map((c) => c.row) : [],
      linksOf:
        options.expandLinks === false || !stages.has("links") ? [] : [...new Set(sources.map((c) => c.row.item_id))],
      similarLinkWeight: vectorWeight,
    });
    // A chunk around a source is a first hit (its row is here) or came with its row.
    const around = (chunkId: number) => candidates.get(chunkId) ?? candidate(expansion.rows.get(chunkId)!);
    const neighbours = expansion.neighbours.map((row) => ({ row, c: around(row.chunkId) }));
    const linked = expansion.links.map((row) => ({ row, c: around(row.chunkId) }));
    const best = Math.max(...first.map((c) => c.match));
    for (const [chunkId, f] of expansion.feedback) {
      const c = candidates.get(chunkId);
      if (!c) continue;
      c.feedback = FEEDBACK_WEIGHT * best * keywordPart(f.bm25, f.known, f.known_share);
      c.feedbackStrength = FEEDBACK_WEIGHT * best * keywordStrength(f.bm25, f.known, f.known_share);
    }
    const ownOfItem = new Map<string, number>();
    for (const c of candidates.values()) {
      const multiplier = context.multiplier(c.row);
      c.own = Math.min(1, eitherEvidence(c.match, c.feedback) * multiplier);
      c.strength = (c.strength + c.feedbackStrength) * multiplier;
      c.score = c.own;
      ownOfItem.set(c.row.item_id, Math.max(ownOfItem.get(c.row.item_id) ?? 0, c.own));
    }
    // Evidence from a neighbour or a link is weighed by the query's context on the chunk that receives it, as its own
    // is: a turn next to a hit, said by another speaker than the one asked about, or written outside the time asked
    // about, gets less.
    const received = (c: Candidate, evidence: number) =>
      eitherEvidence(c.score, Math.min(1, evidence * context.multiplier(c.row)));
    for (const { row, c } of neighbours)
      c.score = received(c, (NEIGHBOUR_WEIGHT * candidates.get(row.source)!.own) / Math.max(1, row.distance));
    for (const { row, c } of linked)
      c.score = received(c, LINK_WEIGHT * Math.min(1, Math.max(0, row.weight)) * (ownOfItem.get(row.source) ?? 0));
    keepLeadFirst(first, candidates.values(), (c) => Math.min(1, c.match * context.multiplier(c.row)));
  }
  const ranked = [...candidates.values()]
    .filter((c) => c.score >= MIN_RELEVANCE)
    .sort(
      (a, b) =>
        b.score - a.score ||
        b.strength - a.strength ||
        Number(a.belowLead) - Number(b.belowLead) ||
        b.bm25 - a.bm25 ||
        (b.similarity ?? -1) - (a.similarity ?? -1) ||
        a.row.chunk_id - b.row.chunk_id,
    );
  const top = await rerankTop(services, query, ranked, limit, (c) => c.row.chunk_content);
  // `similarity` is reported for every hit, whatever counted in its score.
  if (top.length > 0 && !vectorFailed)
    await fillMissingSimilarities(scope, services, embedQuery, top).catch(vectorUnavailable);
  return top.map(toHit);
}

/**
 * The first hit that matches the query best (its match in the query's context, before any evidence from other
 * hits) stays first: feedback, neighbours and links may raise a hit that matches less well up to the lead's score,
 * not past it, so a short reply next to the best turn, echoing its words, does not take first place. Hits that
 * match as well as the lead keep their order by all evidence.
 */
function keepLeadFirst(first: Candidate[], all: Iterable<Candidate>, ownMatch: (c: Candidate) => number): void {
  let lead: Candidate | null = null;
  let leadMatch = -Infinity;
  for (const c of first) {
    const match = ownMatch(c);
    if (match > leadMatch) [lead, leadMatch] = [c, match];
  }
  if (!lead) return;
  for (const c of all) {
    if (c !== lead && ownMatch(c) < leadMatch && c.score >= lead.score) {
      c.score = lead.score;
      c.strength = Math.min(c.strength, lead.strength);
      c.belowLead = true;
    }
  }
}

/** The best keyword hits, best first: their words feed back (expansion.ts). */
function feedbackSources(first: Candidate[]): { content: string; score: number }[] {
  return first
    .filter((c) => c.keyword >= MIN_RELEVANCE)
    .sort((a, b) => b.keyword - a.keyword || b.bm25 - a.bm25)
    .map((c) => ({ content: c.row.chunk_content, score: c.keyword }));
}

/**
 * BM25 over the tenant's own keyword index (keyword-index/scores.ts): ranking depends on its data only. When
 * the query names a time, its time words are matched against the items' times instead of their text,
 * and the best hits from that time join the list (they may rank low on words alone); if nothing was
 * written then and no hit states that time, the words were about something else and the plain query's
 * hits are used. One round trip either way.
 */
async function keywordCandidates(
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
  const statesThen = () => lists.all.some((row) => statedMatch(statedTimes(row), named) === 1);
  if (!lists.thenFound && lists.unchanged && !statesThen()) return { rows: lists.unchanged, textQuery: query };
  return { rows: [...lists.all, ...lists.thenExtra], textQuery };
}

function toHit(c: Candidate): SearchHit {
  const row = c.row;
  return {
    chunkId: row.chunk_id,
    chunkIndex: row.chunk_index,
    chunkContent: row.chunk_content,
    chunkTokens: row.chunk_tokens,
    itemId: row.item_id,
    project: row.project,
    kind: row.kind,
    type: row.type,
    role: row.role,
    conversationId: row.conversation_id,
    position: row.position,
    tags: JSON.parse(row.tags) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    importance: row.importance,
    tier: row.tier,
    createdAt: row.created_at,
    score: round(c.score),
    similarity: c.similarity === null ? null : round(c.similarity),
    keywordRank: c.keywordRank,
    vectorRank: c.vectorRank,
    derived: parseDerived(row.derived),
  };
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
