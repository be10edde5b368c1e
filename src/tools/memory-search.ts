import { z } from "zod";
import { readItemContents } from "../core/memory/item-reads";
import { ITEM_KINDS, ITEM_TYPES } from "../core/memory/item-types";
import { type SearchHit, searchChunks } from "../core/search/search";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { derivedFields, derivedFieldsOf } from "./derived-fields";
import { documentField, documentFieldOf, documentPlaces } from "./document-fields";
import {
  conversationIdParam,
  iso,
  parseTimestamp,
  projectName,
  queryParam,
  readableProjects,
  tagsParam,
  timestampParam,
} from "./params";

/** A source turn folded into a derived memory's result (search.ts, fold-sources.ts). */
const foldedSource = z.object({
  chunk_id: z.number().int(),
  item_id: z.string(),
  session_id: z.string().nullable(),
  project: z.string(),
  role: z.string().nullable(),
  timestamp: z.string(),
  content: z.string(),
  score: z.number(),
  similarity: z.number().nullable(),
});

/** What a result and a folded source turn both say of their chunk. */
function chunkFields(h: SearchHit): z.infer<typeof foldedSource> {
  return {
    chunk_id: h.chunkId,
    session_id: h.conversationId,
    project: h.project,
    role: h.role,
    timestamp: iso(h.createdAt),
    content: h.chunkContent,
    score: h.score,
    similarity: h.similarity,
    item_id: h.itemId,
  };
}

export const search = defineTool({
  name: "search",
  category: "memory",
  core: true,
  title: "Search memory",
  description:
    "Search everything stored (memories, documents, conversation messages) with hybrid keyword (BM25) + semantic " +
    "ranking. Each result is a chunk with its chunk_id, session_id, project, role, timestamp, content and score; " +
    "call get_context with a chunk_id to read the messages around it. score is absolute (0..1, how much of the query the " +
    "chunk holds; the same scale for every query), and nothing is returned when nothing stored is relevant. A date in the " +
    "query ('in May 2023', 'last week') is matched against the results' timestamps, and the messages around a hit come " +
    "with it. A derived memory and the conversation turns it came from share one result: the memory, with the source " +
    "turns that ranked listed in folded_sources. Stashed items are left out unless include_stashed.",
  input: z.object({
    query: queryParam,
    limit: z.number().int().min(1).max(50).default(10),
    project: projectName.optional().describe("Only this project/namespace; default: every project."),
    session_id: conversationIdParam.optional().describe("Only this conversation."),
    role: z.enum(["user", "assistant", "system", "tool"]).optional(),
    types: z.array(z.enum(ITEM_TYPES)).max(ITEM_TYPES.length).optional(),
    kinds: z.array(z.enum(ITEM_KINDS)).max(ITEM_KINDS.length).optional(),
    tags: tagsParam.optional().describe("Items carrying any of these tags."),
    after: timestampParam.optional().describe("Only items created at or after (ISO 8601 or epoch ms)."),
    before: timestampParam.optional().describe("Only items created at or before (ISO 8601 or epoch ms)."),
    include_stashed: z.boolean().default(false),
    as_of: timestampParam
      .optional()
      .describe(
        "What held at this time (ISO 8601 or epoch ms): facts since replaced included; default: what holds now.",
      ),
    mode: z
      .enum(["hybrid", "keyword", "vector"])
      .default("hybrid")
      .describe(
        "hybrid (default) combines the keyword (BM25) and vector scores; keyword or vector scores by one alone.",
      ),
  }),
  output: z.object({
    results: z.array(
      foldedSource.extend({
        type: z.string(),
        kind: z.string(),
        ...derivedFields,
        ...documentField,
        folded_sources: z
          .array(foldedSource)
          .optional()
          .describe(
            "A derived memory's source turns that ranked on their own, best first: they share this result (its score is the best of theirs and the memory's own).",
          ),
      }),
    ),
    total: z.number().int(),
    query: z.string(),
    degraded: z
      .string()
      .optional()
      .describe(
        "Present when the vector part was unavailable (embedder or index failing): the results are keyword matches only, and why.",
      ),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    let degraded: string | undefined;
    const hits = await searchChunks(
      ctx.scope,
      ctx.services,
      input.query,
      {
        projects: readableProjects(ctx, input.project),
        conversationId: input.session_id,
        roles: input.role ? [input.role] : undefined,
        types: input.types,
        kinds: input.kinds,
        tags: input.tags,
        createdAfter: parseTimestamp(input.after, "after"),
        createdBefore: parseTimestamp(input.before, "before"),
        tiers: input.include_stashed ? ["active", "stashed"] : ["active"],
        asOf: parseTimestamp(input.as_of, "as_of"),
      },
      input.limit,
      {
        mode: input.mode,
        foldSources: true,
        onVectorUnavailable: (reason) =>
          (degraded = `keyword results only: semantic search is unavailable (${reason})`),
      },
    );
    const places = await documentPlaces(
      ctx.scope,
      hits.map((h) => ({ id: h.itemId, kind: h.kind })),
    );
    return {
      ...(degraded ? { degraded } : {}),
      results: hits.map((h) => ({
        ...chunkFields(h),
        type: h.type,
        kind: h.kind,
        ...derivedFieldsOf(h.derived),
        ...documentFieldOf(places.get(h.itemId)),
        ...(h.foldedSources ? { folded_sources: h.foldedSources.map(chunkFields) } : {}),
      })),
      total: hits.length,
      query: input.query,
    };
  },
});

export const retrieveByType = defineTool({
  name: "retrieve_by_type",
  category: "memory",
  title: "Retrieve documents by type",
  description: `Retrieve documents filtered by type using semantic search; one result per document, best first, similarity_score being search's absolute score (0..1). doc_type is one of: ${ITEM_TYPES.join(", ")}.`,
  input: z.object({
    query: queryParam,
    doc_type: z.string(),
    top_k: z.number().int().min(1).max(50).default(5),
    project_id: projectName.optional(),
  }),
  output: z.object({
    success: z.literal(true),
    results: z.array(
      z.object({
        resource_id: z.string(),
        content: z.string(),
        similarity_score: z.number(),
        resource_type: z.string(),
        metadata: z.record(z.string(), z.unknown()),
      }),
    ),
    total_results: z.number().int(),
    query_type: z.string(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    if (!(ITEM_TYPES as readonly string[]).includes(input.doc_type)) {
      throw invalidParameter(
        "doc_type",
        `Invalid parameter 'doc_type': '${input.doc_type}' is not a known type; use one of ${ITEM_TYPES.join(", ")}`,
      );
    }
    const hits = await searchChunks(
      ctx.scope,
      ctx.services,
      input.query,
      { projects: readableProjects(ctx, input.project_id), types: [input.doc_type] },
      input.top_k * 3,
    );
    const best = bestPerKey(hits, (h) => h.itemId).slice(0, input.top_k);
    const contents = await readItemContents(
      ctx.scope,
      best.map((h) => h.itemId),
    );
    const results = best.map((h) => ({
      resource_id: h.itemId,
      content: contents.get(h.itemId) ?? h.chunkContent,
      similarity_score: h.score,
      resource_type: h.type,
      metadata: { ...h.metadata, created_at: iso(h.createdAt), project: h.project, tags: h.tags },
    }));
    return { success: true as const, results, total_results: results.length, query_type: input.doc_type };
  },
});

/** First (best-ranked) hit per key, in rank order. */
export function bestPerKey(hits: SearchHit[], key: (h: SearchHit) => string): SearchHit[] {
  const seen = new Set<string>();
  return hits.filter((h) => {
    const k = key(h);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
