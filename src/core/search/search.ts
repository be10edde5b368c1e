import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { type ExpansionRequest, emptyExpansion, narrowExpansion } from "./expansion";
import { type FoldedResult, foldSources } from "./fold-sources";
import { type KeywordCandidates, keywordCandidates, keywordIds } from "./keyword-candidates";
import { pairShare, queryPairs } from "./proximity";
import { mostContextMultiplier, queryContext } from "./query-context";
import { queryTimeRange } from "./query-time";
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
import { rerankOrder } from "./rerank";
import { type Candidate, feedbackSources, foldable, keepLeadFirst, round, toHit } from "./search-hits";
import type { SearchFilters, SearchRow } from "./search-rows";
import type { SearchHit, SearchMode, SearchOptions } from "./search-types";
import { fillMissingSimilarities, noVectorList, vectorList } from "./search-vectors";
import { holds, secondTrip, type TripRequest, walkWithTrip } from "./second-trip";

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
/**
 * Chunks whose words a trip made ahead counts for feedback: the best hits expected (FEEDBACK_DOCS of expansion.ts),
 * and one more in case the filters leave one out.
 */
const FEEDBACK_AHEAD = 4;

/**
 * Retrieval in two round trips, every hit scored on an absolute scale (relevance.ts):
 * 1. the keyword list over chunks (a date in the query is matched against the items' times instead of
 *    their words), while the vector index answers the query's embedding; from posting blocks, this trip reads the
 *    words' blocks, and the winners' rows come in the second (keyword-index/block-search.ts);
 * 2. the vector hits' rows, and what the first hits point to (expansion.ts): feedback words, neighbours
 *    in reading order, linked items, which add their evidence (second-trip.ts). A third trip where the blocks' bound
 *    requires more of them, where the first hits are not those expected (filters left one out), for a query that
 *    names a time (its lists are walked before the trip), or where every posting must be read after all.
 * Hits below MIN_RELEVANCE are dropped, so a query that nothing in the project answers gets no hits. With
 * `foldSources`, a derived memory and its source turns that rank share one result (fold-sources.ts).
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
  const keywordList: Promise<KeywordCandidates> =
    mode !== "vector"
      ? keywordCandidates(scope, query, named, filters, pool)
      : Promise.resolve({ rows: [], textQuery: query });
  const [keyword, vector] = await Promise.all([
    keywordList,
    vectorWeight > 0
      ? vectorList(
          scope,
          services,
          embedQuery,
          filters,
          pool,
          keywordList.then(keywordIds).catch(() => null), // its failure fails the search
          vectorUnavailable,
        ).catch((error: unknown) => {
          vectorUnavailable(error);
          return noVectorList();
        })
      : noVectorList(),
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
  const listedSimilarity = new Map(vector.matches.map((m) => [m.chunkId, m.score]));
  const most = mostContextMultiplier(query, stages);
  const maySource = (match: number) => Math.min(1, match * most) >= MIN_RELEVANCE;
  const vectorOnlyMatch = (similarity: number) => {
    const vectorScore = vectorPart(similarity, chance);
    return mode === "vector" ? vectorScore : fusedScore(0, vectorScore, vectorWeight);
  };
  const feedbackOn = mode !== "vector" && stages.has("feedback");
  /** The second trip's request for these first hits (search's rows, or ids where they are not read yet). */
  const tripRequest = (
    hits: (SearchRow | number)[],
    sources: (SearchRow | number)[],
    feedback: Pick<ExpansionRequest, "feedbackFrom" | "feedbackChunks">,
  ): TripRequest => {
    const held = new Set(hits.map((h) => (typeof h === "number" ? h : h.chunk_id)));
    const unread = vector.matches.filter((m) => !held.has(m.chunkId));
    const possible = [...sources, ...unread.filter((m) => maySource(vectorOnlyMatch(m.score))).map((m) => m.chunkId)];
    return {
      unread: unread.map((m) => m.chunkId),
      expansion:
        possible.length === 0
          ? null
          : {
              query: textQuery,
              filters,
              ...feedback,
              firstHits: [...held, ...unread.map((m) => m.chunkId)],
              sources: possible,
              neighbours: stages.has("neighbours"),
              links: options.expandLinks !== false && stages.has("links"),
              similarLinkWeight: vectorWeight,
            },
    };
  };
  // Where the keyword list's walk is still to run, the second trip goes with it, for the hits it is expected to give
  // (second-trip.ts): every expected hit counts as a possible source.
  const ahead = keyword.pending
    ? await walkWithTrip(
        scope,
        keyword.pending,
        tripRequest(keyword.pending.expected, keyword.pending.expected, {
          feedbackFrom: [],
          ...(feedbackOn ? { feedbackChunks: keyword.pending.expected.slice(0, FEEDBACK_AHEAD) } : {}),
        }),
        filters,
      )
    : null;
  // A walk that ran out of the chunks it was given: every posting is read after all (a trip more).
  const keywordRows = keyword.pending ? (ahead!.rows ?? (await keyword.readAll())) : keyword.rows;
  keywordRows.forEach((row, rank) =>
    Object.assign(candidate(row), {
      bm25: row.bm25,
      keyword: keywordPart(row.bm25, row.known, row.known_share),
      strength: keywordStrength(row.bm25, row.known, row.known_share),
      keywordRank: rank + 1,
      // A keyword hit outside the vector list still has a cosine, read from its stored vector (search-vectors.ts).
      similarity: listedSimilarity.get(row.chunk_id) ?? vector.keywordCosines.get(row.chunk_id) ?? null,
    }),
  );
  // Proximity: a keyword hit holding the query's words side by side, as the query says them, matches it more closely.
  // It raises the keyword part before fusion: word order says nothing about the vector part.
  const pairs = mode !== "vector" && stages.has("proximity") ? queryPairs(scope.tenantId, textQuery) : null;
  const fuse = (c: Candidate) => {
    const vectorScore = vectorPart(c.similarity, chance);
    const gain =
      pairs && c.keyword > 0 ? 1 + PROXIMITY_WEIGHT * pairShare(pairs, c.row.chunk_content, c.row.term_freqs) : 1;
    c.match = mode === "vector" ? vectorScore : fusedScore(Math.min(1, c.keyword * gain), vectorScore, vectorWeight);
    c.strength = mode === "vector" ? vectorScore : fusedScore(c.strength * gain, vectorScore, vectorWeight);
  };
  for (const c of candidates.values()) fuse(c);

  // The second round trip reads the vector hits' rows and, beside them, what the first hits that may be sources point
  // to: a hit is a source when its match in the query's context reaches MIN_RELEVANCE, and the context needs every
  // first hit's row, so it is bounded here by the most the context can raise a match. A trip made ahead serves it
  // where it holds what is asked.
  const feedbackFrom = feedbackOn ? feedbackSources([...candidates.values()]) : [];
  const request = tripRequest(
    [...candidates.values()].map((c) => c.row),
    [...candidates.values()].filter((c) => maySource(c.match)).map((c) => c.row),
    { feedbackFrom },
  );
  let trip = ahead && holds(ahead.request, request) ? ahead.trip : await secondTrip(scope, request, filters);
  const vectorRows = trip.vectorRows;
  let vectorRank = 0;
  for (const m of vector.matches) {
    const row = candidates.get(m.chunkId)?.row ?? vectorRows.get(m.chunkId);
    if (!row) continue; // filtered out, or gone since the index was written
    const c = candidate(row);
    Object.assign(c, { vectorRank: ++vectorRank, similarity: m.score });
    if (c.keywordRank === null) fuse(c);
  }
  const first = [...candidates.values()];

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
    const rows = first.map((c) => c.row);
    let read = trip.expansion?.(rows, feedbackFrom);
    // A feedback word the trip made ahead did not count: the trip is made again, for what is asked.
    if (read === null) {
      trip = await secondTrip(scope, request, filters);
      read = trip.expansion!(rows, feedbackFrom);
    }
    const expansion = read
      ? narrowExpansion(
          read,
          sources.map((c) => c.row),
        )
      : emptyExpansion();
    // A chunk around a source is a first hit (its row is here) or came with its row.
    const aroundOf = <T extends { chunkId: number }>(rows: T[]) =>
      rows.flatMap((row) => {
        const held = candidates.get(row.chunkId)?.row ?? expansion.rows.get(row.chunkId);
        return held ? [{ row, c: candidate(held) }] : [];
      });
    const neighbours = aroundOf(expansion.neighbours);
    const linked = aroundOf(expansion.links);
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
  const order = await rerankOrder(services, query, ranked, limit, (c) => c.row.chunk_content);
  const top: FoldedResult<Candidate>[] = options.foldSources
    ? foldSources(order, limit, foldable)
    : order.slice(0, limit).map((hit) => ({ hit, folded: [] }));
  // `similarity` is reported for every hit, whatever counted in its score.
  const shown = top.flatMap((r) => [r.hit, ...r.folded]);
  if (shown.length > 0 && !vectorFailed)
    await fillMissingSimilarities(scope, services, embedQuery, shown).catch(vectorUnavailable);
  return top.map(({ hit, folded }) =>
    folded.length === 0
      ? toHit(hit)
      : {
          ...toHit(hit),
          // The result stands for the memory and the turns folded into it: it scores as the best of them.
          score: round(Math.max(hit.score, ...folded.map((c) => c.score))),
          foldedSources: folded.map(toHit),
        },
  );
}
