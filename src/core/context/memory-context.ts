import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { summarizeToFit } from "../../shared/extractive";
import { renderProfile, subjectForQuery } from "../extraction/context-profile";
import { readProfile } from "../extraction/profiles";
import { traverseLinks } from "../graph/graph";
import type { DerivedView } from "../memory/derived";
import type { ItemFilter } from "../memory/item-filters";
import { readItems, type StoredItem } from "../memory/item-reads";
import { searchChunks } from "../search/search";
import { ALL_PROJECTS } from "./cache-generation";
import { countCacheOutcome, lookupCached, paramsHash, storeCached } from "./semantic-cache";

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

export interface ContextMemory {
  id: string;
  content: string;
  tokens: number;
  similarity: number;
  source: "direct" | "related" | "profile";
  summarized: boolean;
  /** A derived memory's kind, subject, validity and sources; null for a stored item. */
  derived: DerivedView | null;
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

/** A memory shorter than this is not worth summarizing into the leftover budget. */
const MIN_SUMMARY_TOKENS = 8;

/**
 * Builds the memories that best answer a query within a token budget: hybrid search for direct
 * matches, BFS over links for related ones (score = match score x link weights), ordered by strategy,
 * each taken whole while it fits, else summarized extractively into what is left. Token counts are
 * the stored js-tiktoken counts (or the exact count of a summary); their sum stays within
 * budget x (1 - LLM_MEMORY_TOKEN_BUFFER_RATIO).
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
      onVectorUnavailable: unavailable,
      // The embedder already failed for this query: asking it again inside search would only wait twice.
      ...(queryVector === undefined ? { mode: "keyword" as const } : {}),
    }),
    config.extraction.llm === "off" ? null : subjectForQuery(scope, request.projects, request.namespace, request.query),
  ]);
  const direct = new Map<string, number>();
  for (const hit of hits) {
    if (direct.size >= request.topK) break;
    if (hit.score >= request.minSimilarity && !direct.has(hit.itemId)) direct.set(hit.itemId, hit.score);
  }
  // The direct hits' rows and their links are read side by side; only linked items wait for the links.
  const profileBudget = Math.min(PROFILE_MAX_TOKENS, Math.floor(budget * PROFILE_SHARE));
  const [directItems, related, profile] = await Promise.all([
    readItems(scope, [...direct.keys()]),
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
  const candidates = [
    ...[...direct].map(([id, score]) => ({ item: items.get(id), similarity: score, source: "direct" as const })),
    ...related.map((r) => ({ item: items.get(r.id), similarity: r.score, source: "related" as const })),
  ].filter((c): c is { item: StoredItem; similarity: number; source: "direct" | "related" } => allowed(c.item));
  candidates.sort(ORDER[request.strategy]);

  const counter = await services.tokens();
  const memories: ContextMemory[] = [];
  let used = 0;
  let truncated = false;
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
  for (const { item, similarity, source } of candidates) {
    const left = budget - used;
    if (item.tokens <= left) {
      memories.push({
        id: item.id,
        content: item.content,
        tokens: item.tokens,
        similarity: round(similarity),
        source,
        summarized: false,
        derived: item.derived,
      });
      used += item.tokens;
      continue;
    }
    truncated = true;
    if (!request.autoSummarize || left < MIN_SUMMARY_TOKENS) continue;
    const summary = summarizeToFit(item.content, request.query, left, counter);
    if (!summary) continue;
    memories.push({
      id: item.id,
      content: summary.content,
      tokens: summary.tokens,
      similarity: round(similarity),
      source,
      summarized: true,
      derived: item.derived,
    });
    used += summary.tokens;
  }
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

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
