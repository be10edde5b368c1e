import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { renderProfile, subjectForQuery } from "../extraction/context-profile";
import { readProfile } from "../extraction/profiles";
import { traverseLinks } from "../graph/graph";
import type { ItemFilter } from "../memory/item-filters";
import { readItems, type StoredItem } from "../memory/item-reads";
import { searchChunks } from "../search/search";
import { ALL_PROJECTS } from "./cache-generation";
import { type ContextCandidate, type ContextMemory, fillContext } from "./context-fill";
import { countCacheOutcome, lookupCached, paramsHash, storeCached } from "./semantic-cache";

export type { ContextMemory };
export type ContextStrategy = "relevance" | "importance" | "recency";

export interface MemoryContextRequest {
  query: string;
  tokenBudget: number;
  topK: number;
  includeRelated: boolean;
  maxDepth: number;
  autoSummarize: boolean;
  minSimilarity: number;
  /** The namespace asked for, or null to search every project in `projects`. */
  namespace: string | null;
  /** Projects the caller may read (undefined = all). */
  projects: string[] | undefined;
  useCache: boolean;
  strategy: ContextStrategy;
  /** What held at this instant (epoch ms); null: what holds now. */
  asOf: number | null;
}

export interface MemoryContext {
  memories: ContextMemory[];
  total_tokens: number;
  token_budget: number;
  memory_count: number;
  cache_hit: boolean;
  truncated: boolean;
  /** Present when semantic search was unavailable: built from keyword matches, the cache left out. */
  degraded?: string;
}

/** The search filter of a request: its projects, and what held at its `asOf`. */
function asOfFilter(request: MemoryContextRequest): ItemFilter {
  return { projects: request.projects, ...(request.asOf === null ? {} : { asOf: request.asOf }) };
}

/** A profile opens a context with at most this share of its budget, and never more than PROFILE_MAX_TOKENS. */
const PROFILE_SHARE = 0.25;
const PROFILE_MAX_TOKENS = 1_000;
/**
 * The most source turns of the direct hits' memories one context reads (memories in rank order, each's sources as
 * listed): a memory said again and again may cite hundreds, and the budget shows few.
 */
const MOST_SOURCES_READ = 100;

/**
 * Builds the memories that best answer a query within a token budget: hybrid search for direct
 * matches, BFS over links for related ones (score = match score x link weights), ordered by strategy,
 * each taken whole while it fits, else summarized extractively into what is left (context-fill.ts). A derived
 * memory comes with its source turns: those search folded into its result as direct hits, the others while the
 * budget lasts. Token counts are the stored js-tiktoken counts (or the exact count of a summary); their sum stays
 * within budget x (1 - LLM_MEMORY_TOKEN_BUFFER_RATIO).
 */
export async function buildMemoryContext(
  scope: TenantScope,
  services: Services,
  request: MemoryContextRequest,
): Promise<MemoryContext> {
  const { config } = services;
  // Without the query's embedding (the embedder failing) the context is built from keyword matches, uncached.
  let degraded: string | undefined;
  const unavailable = (reason: string) =>
    (degraded ??= `keyword matches only: semantic search is unavailable (${reason})`);
  const queryVector = await services.embedder.embed([request.query], "query").then(
    (vectors) => vectors[0]!,
    (error: unknown) => (unavailable(error instanceof Error ? error.message : String(error)), undefined),
  );
  const cacheOn = request.useCache && config.cache.enabled && queryVector !== undefined;
  const cacheProject = request.namespace ?? ALL_PROJECTS;
  const maxDepth = Math.min(request.maxDepth, config.graphMaxDepth);
  const params = cacheOn
    ? await paramsHash({
        ...request,
        query: undefined,
        useCache: undefined,
        maxDepth,
        encoding: config.tokenEncoding,
        buffer: config.tokenBufferRatio,
      })
    : "";
  let generation = 0;
  let linkSeq = 0;
  if (cacheOn) {
    const cached = await lookupCached<MemoryContext>(
      scope,
      services.cache,
      config.cache,
      cacheProject,
      params,
      queryVector!,
    );
    services.waitUntil(countCacheOutcome(scope, cached.value !== null));
    if (cached.value) return { ...cached.value, cache_hit: true };
    ({ generation, linkSeq } = cached);
  }

  const budget = Math.floor(request.tokenBudget * (1 - config.tokenBufferRatio));
  // Who the context is about is read beside the search (a deployment that extracts nothing has no profiles).
  const [hits, subject] = await Promise.all([
    searchChunks(scope, services, request.query, asOfFilter(request), request.topK * 3, {
      queryVector,
      expandLinks: false,
      foldSources: true,
      onVectorUnavailable: unavailable,
      // The embedder already failed for this query: asking it again inside search would only wait twice.
      ...(queryVector === undefined ? { mode: "keyword" as const } : {}),
    }),
    config.extraction.llm === "off" ? null : subjectForQuery(scope, request.projects, request.namespace, request.query),
  ]);
  // Each direct hit by item, with the source turns folded into it; `direct` holds them all (their links are followed).
  const hitsOf = new Map<string, { folded: { id: string; score: number }[]; sources: string[] }>();
  const direct = new Map<string, number>();
  for (const hit of hits) {
    if (hitsOf.size >= request.topK) break;
    if (hit.score < request.minSimilarity || direct.has(hit.itemId)) continue;
    direct.set(hit.itemId, hit.score);
    // A folded turn that scores below min_similarity comes with its memory only as one of its sources.
    const folded = (hit.foldedSources ?? []).filter((f) => f.score >= request.minSimilarity && !direct.has(f.itemId));
    for (const f of folded) direct.set(f.itemId, f.score);
    hitsOf.set(hit.itemId, {
      folded: folded.map((f) => ({ id: f.itemId, score: f.score })),
      sources: hit.derived?.sources ?? [],
    });
  }
  const sourceIds = [...new Set([...hitsOf.values()].flatMap((h) => h.sources.filter((id) => !direct.has(id))))].slice(
    0,
    MOST_SOURCES_READ,
  );
  // The direct hits' rows (with their memories' source turns) and their links are read side by side; only linked
  // items wait for the links.
  const profileBudget = Math.min(PROFILE_MAX_TOKENS, Math.floor(budget * PROFILE_SHARE));
  const [directItems, related, profile] = await Promise.all([
    readItems(scope, [...direct.keys(), ...sourceIds]),
    request.includeRelated && direct.size > 0
      ? traverseLinks(scope, "item", direct, { maxDepth, maxResults: config.graphMaxResults })
      : [],
    subject === null
      ? null
      : readProfile(scope, request.projects ?? null, subject, profileBudget, request.asOf).catch(() => null),
  ]);
  const relatedIds = related.map((r) => r.id).filter((id) => !directItems.has(id));
  const items =
    relatedIds.length > 0 ? new Map([...directItems, ...(await readItems(scope, relatedIds))]) : directItems;
  // As of an earlier time, a direct hit search found valid then may since have been superseded.
  const allowed = (item: StoredItem | undefined): item is StoredItem =>
    item !== undefined &&
    (item.tier === "active" || (request.asOf !== null && item.tier === "superseded" && direct.has(item.id))) &&
    (request.projects === undefined || request.projects.includes(item.project));
  const allowedItem = (id: string) => {
    const item = items.get(id);
    return allowed(item) ? [item] : [];
  };
  // As of an earlier time, a memory's source turns said since are not shown.
  const allowedSource = (id: string) =>
    allowedItem(id).filter((turn) => request.asOf === null || turn.createdAt <= request.asOf);
  const inFolds = new Set([...hitsOf.values()].flatMap((h) => h.folded.map((f) => f.id)));
  const candidates: ContextCandidate[] = [
    ...[...hitsOf].flatMap(([id, hit]) =>
      allowedItem(id).map((item) => ({
        item,
        similarity: direct.get(id)!,
        source: "direct" as const,
        folded: hit.folded.flatMap((f) => allowedItem(f.id).map((turn) => ({ item: turn, similarity: f.score }))),
        sources: hit.sources
          .flatMap(allowedSource)
          .filter((turn) => !inFolds.has(turn.id))
          .sort((a, b) => a.createdAt - b.createdAt),
      })),
    ),
    ...related.flatMap((r) =>
      allowedItem(r.id).map((item) => ({
        item,
        similarity: r.score,
        source: "related" as const,
        folded: [],
        sources: [],
      })),
    ),
  ];
  candidates.sort(ORDER[request.strategy]);

  const counter = await services.tokens();
  const memories: ContextMemory[] = [];
  let used = 0;
  const profileText = profile === null ? null : renderProfile(profile, profileBudget, counter);
  if (profile !== null && profileText !== null) {
    memories.push({
      id: `profile:${profile.subject}`,
      content: profileText.content,
      tokens: profileText.tokens,
      similarity: 1,
      source: "profile",
      summarized: false,
      derived: null,
    });
    used += profileText.tokens;
  }
  const filled = fillContext(candidates, budget, used, {
    autoSummarize: request.autoSummarize,
    query: request.query,
    counter,
  });
  memories.push(...filled.memories);
  used = filled.used;
  const truncated = filled.truncated;
  const result: MemoryContext = {
    memories,
    total_tokens: used,
    token_budget: request.tokenBudget,
    memory_count: memories.length,
    cache_hit: false,
    truncated,
    ...(degraded ? { degraded } : {}),
  };
  if (cacheOn) {
    services.waitUntil(
      storeCached(scope, services.cache, config.cache, {
        project: cacheProject,
        params,
        generation,
        linkSeq,
        // The items whose links the traversal followed: a link change elsewhere cannot alter this context.
        linkItems: request.includeRelated
          ? [...direct.keys(), ...related.filter((r) => r.depth < maxDepth).map((r) => r.id)]
          : [],
        query: request.query,
        vector: queryVector!,
        value: result,
      }).catch((e) => console.error("cache store failed", e)),
    );
  }
  return result;
}

type Candidate = { item: StoredItem; similarity: number };
const ORDER: Record<ContextStrategy, (a: Candidate, b: Candidate) => number> = {
  relevance: (a, b) => b.similarity - a.similarity,
  importance: (a, b) => b.item.importance - a.item.importance || b.similarity - a.similarity,
  recency: (a, b) => b.item.createdAt - a.item.createdAt || b.similarity - a.similarity,
};
