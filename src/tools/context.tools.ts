import { z } from "zod";
import { buildContextWindow } from "../core/context/context-window";
import { buildMemoryContext } from "../core/context/memory-context";
import { cacheStats, clearCache } from "../core/context/semantic-cache";
import { MAX_ITEM_CHARS } from "../core/memory/item-types";
import { readAroundChunk } from "../core/memory/neighbors";
import { notFound } from "../errors";
import { strictInput } from "../validation";
import { ANNOTATIONS, type AnyTool, defineTool } from "./define-tool";
import { derivedFields, derivedFieldsOf } from "./derived-fields";
import { documentField, documentFieldOf, documentPlaces } from "./document-fields";
import { iso, parseTimestamp, projectName, readableProjects, timestampParam } from "./params";

const buildContext = defineTool({
  name: "build_context",
  category: "context",
  core: true,
  title: "Build a context window from documents",
  description:
    "Build a context window from a list of documents with token limiting: documents are joined in order (blank line " +
    "between them) until max_tokens; the first that does not fit is cut at a token boundary and the rest are left out. " +
    "token_count is the exact js-tiktoken count of the returned context.",
  input: z.object({
    documents: z
      .array(
        strictInput(
          z.object({ content: z.string().max(MAX_ITEM_CHARS), id: z.union([z.string(), z.number()]).optional() }),
        ),
      )
      .min(1)
      .max(200),
    max_tokens: z.number().int().min(100).max(32000).default(4000),
  }),
  output: z.object({
    success: z.literal(true),
    context: z.string(),
    token_count: z.number().int(),
    documents_included: z.number().int(),
    documents_truncated: z.number().int(),
    documents_omitted: z.number().int(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const window = buildContextWindow(input.documents, input.max_tokens, await ctx.services.tokens());
    return {
      success: true as const,
      context: window.context,
      token_count: window.tokenCount,
      documents_included: window.included,
      documents_truncated: window.truncated,
      documents_omitted: window.omitted,
    };
  },
});

const memoryContextBuild = defineTool({
  name: "memory_context_build",
  category: "context",
  core: true,
  title: "Build memory context within a token budget",
  description:
    "Build an optimal set of memories within a token budget: hybrid search for direct matches, link traversal (BFS) for " +
    "related memories, long memories summarized extractively to fit. Sum of tokens stays within token_budget minus the " +
    "configured buffer (10%); each tokens value is the exact js-tiktoken count of its content. similarity is search's " +
    "absolute score (0..1, the same scale for every query, so min_similarity means the same everywhere) for direct matches, " +
    "times link weights for related ones. Results are cached per namespace " +
    "and invalidated by any write to it.",
  input: z.object({
    query: z.string().min(1).max(2000),
    token_budget: z.number().int().min(100).max(1_000_000),
    top_k: z.number().int().min(1).max(100).default(20),
    include_related: z.boolean().default(true),
    max_depth: z.number().int().min(1).max(5).default(2),
    auto_summarize: z.boolean().default(true),
    min_similarity: z.number().min(0).max(1).default(0.5),
    namespace: projectName.optional().describe("Default: every namespace this key may read."),
    use_cache: z.boolean().default(true),
    strategy: z.enum(["relevance", "importance", "recency"]).default("relevance"),
    as_of: timestampParam
      .optional()
      .describe("Build from what held at this time (ISO 8601 or epoch ms); default: what holds now."),
  }),
  output: z.object({
    memories: z.array(
      z.object({
        id: z.string(),
        content: z.string(),
        tokens: z.number().int(),
        similarity: z.number(),
        source: z
          .enum(["direct", "related", "profile"])
          .describe("profile: what is remembered about the subject the query names (or the default subject), first"),
        summarized: z.boolean(),
        ...derivedFields,
        ...documentField,
        source_of: z
          .string()
          .optional()
          .describe(
            "On a conversation turn a derived memory came from: that memory's id, which it follows (direct: the turn matched the query itself; related: added with its memory while the budget lasted).",
          ),
      }),
    ),
    total_tokens: z.number().int(),
    token_budget: z.number().int(),
    memory_count: z.number().int(),
    cache_hit: z.boolean(),
    truncated: z.boolean(),
    degraded: z
      .string()
      .optional()
      .describe("Present when semantic search was unavailable: the context holds keyword matches only, and why."),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const context = await buildMemoryContext(ctx.scope, ctx.services, {
      query: input.query,
      tokenBudget: input.token_budget,
      topK: input.top_k,
      includeRelated: input.include_related,
      maxDepth: input.max_depth,
      autoSummarize: input.auto_summarize,
      minSimilarity: input.min_similarity,
      namespace: input.namespace ?? null,
      projects: readableProjects(ctx, input.namespace),
      useCache: input.use_cache,
      strategy: input.strategy,
      asOf: parseTimestamp(input.as_of, "as_of") ?? null,
    });
    const places = await documentPlaces(ctx.scope, context.memories);
    return {
      ...context,
      memories: context.memories.map(({ derived, sourceOf, kind: _kind, ...memory }) => ({
        ...memory,
        ...derivedFieldsOf(derived),
        ...documentFieldOf(places.get(memory.id)),
        ...(sourceOf ? { source_of: sourceOf } : {}),
      })),
    };
  },
});

const memoryCacheClear = defineTool({
  name: "memory_cache_clear",
  category: "context",
  title: "Clear the semantic cache",
  description:
    "Clear this tenant's semantic cache, or with `pattern` only entries whose query or namespace matches it (`*` and `?` " +
    "wildcards; without one, a substring match). Writes already invalidate affected entries; use this to force fresh results.",
  input: z.object({ pattern: z.string().min(1).max(200).nullable().default(null) }),
  output: z.object({ cleared: z.boolean(), entries_removed: z.number().int() }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => ({
    cleared: true,
    entries_removed: await clearCache(ctx.scope, ctx.services.cache, input.pattern),
  }),
});

const memoryCacheStats = defineTool({
  name: "memory_cache_stats",
  category: "context",
  title: "Semantic cache statistics",
  description:
    "Statistics of this tenant's semantic cache: live entries (unexpired, not invalidated by a write or by a new link of an item they followed), exact hit and miss " +
    "counts, and memory_usage_bytes = UTF-8 bytes of the live cached values (in D1, or in KV when large).",
  input: z.object({}),
  output: z.object({
    enabled: z.boolean(),
    size: z.number().int(),
    max_size: z.number().int(),
    hit_count: z.number().int(),
    miss_count: z.number().int(),
    hit_rate: z.number(),
    ttl_seconds: z.number().int(),
    memory_usage_bytes: z.number().int(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (_input, ctx) => {
    const stats = await cacheStats(ctx.scope);
    const lookups = stats.hitCount + stats.missCount;
    const { cache } = ctx.services.config;
    return {
      enabled: cache.enabled,
      size: stats.size,
      max_size: cache.maxSize,
      hit_count: stats.hitCount,
      miss_count: stats.missCount,
      hit_rate: lookups === 0 ? 0 : Math.round((stats.hitCount / lookups) * 1000) / 1000,
      ttl_seconds: cache.ttlSeconds,
      memory_usage_bytes: stats.bytes,
    };
  },
});

const chunkView = z.object({
  chunk_id: z.number().int(),
  content: z.string(),
  timestamp: z.string(),
  role: z.string().nullable(),
});

const getContext = defineTool({
  name: "get_context",
  category: "context",
  core: true,
  title: "Read around a search result",
  description:
    "Retrieve conversation context before or after a search result to understand the full discussion. Use after " +
    "search: pass a result's chunk_id to see the messages (or document chunks) around it.",
  input: z.object({
    chunk_id: z.number().int().min(1),
    direction: z.enum(["before", "after", "both"]).default("both"),
    count: z.number().int().min(1).max(10).default(3),
  }),
  output: z.object({
    anchor: chunkView,
    before: z.array(chunkView),
    after: z.array(chunkView),
    session_id: z.string(),
    project: z.string(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const around = await readAroundChunk(
      ctx.scope,
      input.chunk_id,
      input.direction === "after" ? 0 : input.count,
      input.direction === "before" ? 0 : input.count,
    );
    if (!around) throw notFound("Chunk not found", { parameter: "chunk_id", chunk_id: input.chunk_id });
    const view = (c: { chunkId: number; content: string; createdAt: number; role: string | null }) => ({
      chunk_id: c.chunkId,
      content: c.content,
      timestamp: iso(c.createdAt),
      role: c.role,
    });
    return {
      anchor: view(around.anchor),
      before: around.before.map(view),
      after: around.after.map(view),
      session_id: around.conversationId ?? "",
      project: around.project,
    };
  },
});

/** Context windows under a token budget, and their semantic cache. */
export const CONTEXT_TOOLS: readonly AnyTool[] = [
  buildContext,
  memoryContextBuild,
  memoryCacheClear,
  memoryCacheStats,
  getContext,
];
