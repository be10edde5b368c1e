import { allInOneTrip } from "../../db/one-trip";
import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { parseDerived } from "../memory/derived";
import { emptyExpansion, expansionRead, narrowExpansion } from "./expansion";
import { type FoldableHit, type FoldedResult, foldSources } from "./fold-sources";
import { keywordCandidates } from "./keyword-candidates";
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
import type { SearchFilters, SearchRow } from "./search-rows";
import type { SearchHit, SearchMode, SearchOptions } from "./search-types";
import { fillMissingSimilarities, noVectorList, vectorList, vectorRowsStatement } from "./search-vectors";

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
 * 1. the keyword list over chunks (a date in the query is matched against the items' times instead of
 *    their words), while the vector index answers the query's embedding;
 * 2. the vector hits' rows, and what the first hits point to (expansion.ts): feedback words, neighbours
 *    in reading order, linked items, which add their evidence.
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
  const keywordList =
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
          keywordList.then((k) => k.rows.map((row) => row.chunk_id)).catch(() => null), // its failure fails the search
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
  keyword.rows.forEach((row, rank) =>
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
  // first hit's row, so it is bounded here by the most the context can raise a match.
  const most = mostContextMultiplier(query, stages);
  const maySource = (match: number) => Math.min(1, match * most) >= MIN_RELEVANCE;
  const unread = vector.matches.filter((m) => !candidates.has(m.chunkId));
  const vectorOnlyMatch = (similarity: number) => {
    const vectorScore = vectorPart(similarity, chance);
    return mode === "vector" ? vectorScore : fusedScore(0, vectorScore, vectorWeight);
  };
  const possibleSources: (SearchRow | number)[] = [
    ...[...candidates.values()].filter((c) => maySource(c.match)).map((c) => c.row),
    ...unread.filter((m) => maySource(vectorOnlyMatch(m.score))).map((m) => m.chunkId),
  ];
  const around =
    possibleSources.length === 0
      ? null
      : expansionRead(scope, {
          query: textQuery,
          filters,
          feedbackFrom: mode === "vector" || !stages.has("feedback") ? [] : feedbackSources([...candidates.values()]),
          firstHits: [...candidates.keys(), ...unread.map((m) => m.chunkId)],
          sources: possibleSources,
          neighbours: stages.has("neighbours"),
          links: options.expandLinks !== false && stages.has("links"),
          similarLinkWeight: vectorWeight,
        });
  const unreadRows =
    unread.length === 0
      ? null
      : vectorRowsStatement(
          scope,
          unread.map((m) => m.chunkId),
          filters,
        );
  const results = await allInOneTrip<unknown>(
    scope.d1,
    [unreadRows, around?.statement].filter((s) => s !== null && s !== undefined),
  );
  const vectorRows = new Map(
    (unreadRows ? (results[0]!.results as SearchRow[]) : []).map((row) => [row.chunk_id, row]),
  );
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
    const expansion = around
      ? narrowExpansion(
          around.read(
            results.at(-1)!,
            first.map((c) => c.row),
          ),
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

/**
 * The best keyword hits, best first: their words feed back (expansion.ts). A derived memory and its source turns say
 * one thing, so they feed back as one hit, the result they fold into (fold-sources.ts), with the text of all and the
 * best keyword part of any: as separate hits, one piece of evidence would fill the feedback's few places.
 */
function feedbackSources(first: Candidate[]): { content: string; score: number }[] {
  const best = first.filter((c) => c.keyword >= MIN_RELEVANCE).sort((a, b) => b.keyword - a.keyword || b.bm25 - a.bm25);
  return foldSources(best, best.length, foldable).map(({ hit, folded }) => ({
    content: [hit, ...folded].map((c) => c.row.chunk_content).join("\n"),
    score: Math.max(hit.keyword, ...folded.map((c) => c.keyword)),
  }));
}

/** What folding needs of a candidate: its item, and a derived memory's source turns. */
function foldable(c: Candidate): FoldableHit {
  return { itemId: c.row.item_id, sources: parseDerived(c.row.derived)?.sources ?? null };
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
