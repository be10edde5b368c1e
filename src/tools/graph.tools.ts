import { z } from "zod";
import {
  CONTEXT_RELATIONSHIPS,
  conversationEdges,
  linkConversations,
  requireConversation,
} from "../core/conversations/conversations";
import { knowledgeGraph } from "../core/graph/graph-export";
import { autoLinkDocument, documentRelationships, queryResourceGraph } from "../core/graph/graph-queries";
import { linkItems, RESOURCE_RELATIONSHIPS } from "../core/graph/links";
import { ANNOTATIONS, type AnyTool, defineTool } from "./define-tool";
import { getContextLinksForMessage, getMessagesForChunk, storeContextLinksTool } from "./graph-context-links";
import { conversationIdParam, iso, readableProjects } from "./params";

const linkResources = defineTool({
  name: "link_resources",
  category: "graph",
  title: "Link two resources",
  description:
    "Create a relationship link between two resources (memories, documents, messages) by id. Links are directed and " +
    "weighted (default 1.0); linking the same pair with the same type again updates the weight. memory_context_build " +
    `follows links to add related memories. relationship_type is one of: ${RESOURCE_RELATIONSHIPS.join(", ")}.`,
  input: z.object({
    source_id: z.string().min(1).max(200),
    target_id: z.string().min(1).max(200),
    relationship_type: z.enum(RESOURCE_RELATIONSHIPS),
    weight: z.number().min(0).max(1).default(1),
  }),
  output: z.object({
    success: z.literal(true),
    relationship_id: z.string(),
    source_id: z.string(),
    target_id: z.string(),
    relationship_type: z.string(),
    created_at: z.string(),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const link = await linkItems(ctx.scope, {
      sourceId: input.source_id,
      targetId: input.target_id,
      relationshipType: input.relationship_type,
      weight: input.weight,
    });
    return {
      success: true as const,
      relationship_id: link.id,
      source_id: link.sourceId,
      target_id: link.targetId,
      relationship_type: link.relationshipType,
      created_at: iso(link.createdAt),
    };
  },
});

const contextType = z.enum(CONTEXT_RELATIONSHIPS);

const addRelationship = defineTool({
  name: "add_relationship",
  category: "graph",
  title: "Relate two contexts",
  description:
    "Add a directed relationship (similar, continues, references, parent, child) between two existing contexts in the knowledge graph, with a weight 0-1.",
  input: z.object({
    sourceContextId: conversationIdParam,
    targetContextId: conversationIdParam,
    relationshipType: contextType,
    weight: z.number().min(0).max(1).default(0.8),
  }),
  output: z.object({
    success: z.literal(true),
    sourceContextId: z.string(),
    targetContextId: z.string(),
    relationshipType: z.string(),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    await linkConversations(ctx.scope, {
      sourceId: input.sourceContextId,
      targetId: input.targetContextId,
      type: input.relationshipType,
      weight: input.weight,
    });
    return {
      success: true as const,
      sourceContextId: input.sourceContextId,
      targetContextId: input.targetContextId,
      relationshipType: input.relationshipType,
    };
  },
});

const getRelatedContexts = defineTool({
  name: "get_related_contexts",
  category: "graph",
  title: "Related contexts",
  description:
    "Get the ids of contexts related to a context (manual relationships and auto-links), optionally of one relationship type and direction; strongest first.",
  input: z.object({
    contextId: conversationIdParam,
    relationshipType: contextType.optional(),
    direction: z.enum(["incoming", "outgoing", "both"]).default("both"),
  }),
  output: z.array(z.string()),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    await requireConversation(ctx.scope, input.contextId);
    const edges = await conversationEdges(ctx.scope, input.contextId, input.direction, input.relationshipType);
    return [...new Set(edges.map((e) => (e.sourceId === input.contextId ? e.targetId : e.sourceId)))];
  },
});

const queryGraph = defineTool({
  name: "query_graph",
  category: "graph",
  title: "Query the knowledge graph",
  description:
    "Find resources matching a query (hybrid search; relevance_score is its absolute score, 0..1) with their relationships; with relationship_types, only resources that " +
    "have at least one relationship of those types, and only those relationships.",
  input: z.object({
    query: z.string().min(1).max(2000),
    relationship_types: z.array(z.string().min(1).max(100)).max(20).optional(),
    limit: z.number().int().min(1).max(50).default(10),
  }),
  output: z.object({
    success: z.literal(true),
    query: z.string(),
    results: z.array(
      z.object({
        resource_id: z.string(),
        content: z.string(),
        relationships: z.array(
          z.object({ target_id: z.string(), relationship_type: z.string(), strength: z.number() }),
        ),
        relevance_score: z.number(),
      }),
    ),
    total_results: z.number().int(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const results = await queryResourceGraph(
      ctx.scope,
      ctx.services,
      input.query,
      input.relationship_types,
      readableProjects(ctx, undefined),
      input.limit,
    );
    return {
      success: true as const,
      query: input.query,
      results: results.map((r) => ({
        resource_id: r.itemId,
        content: r.content,
        relationships: r.relationships.map((l) => ({
          target_id: l.otherId,
          relationship_type: l.type,
          strength: l.weight,
        })),
        relevance_score: r.score,
      })),
      total_results: results.length,
    };
  },
});

const autoLinkDocuments = defineTool({
  name: "auto_link_documents",
  category: "graph",
  title: "Auto-link similar documents",
  description:
    "Link a document to the documents whose embeddings are at least similarity_threshold similar (relationship similar_content, " +
    "weight = similarity). New documents are auto-linked in the background at 0.8; call this for another threshold.",
  input: z.object({
    document_id: z.string().min(1).max(200),
    similarity_threshold: z.number().min(0).max(1).default(0.8),
  }),
  output: z.object({
    success: z.literal(true),
    document_id: z.string(),
    links_created: z.number().int(),
    similar_documents: z.array(
      z.object({ document_id: z.string(), similarity_score: z.number(), relationship_type: z.string() }),
    ),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const { item, similar } = await autoLinkDocument(
      ctx.scope,
      ctx.services,
      input.document_id,
      input.similarity_threshold,
    );
    const type = item.conversationId ? "similar" : "similar_content";
    return {
      success: true as const,
      document_id: input.document_id,
      links_created: similar.length,
      similar_documents: similar.map((s) => ({
        document_id: s.id,
        similarity_score: s.similarity,
        relationship_type: type,
      })),
    };
  },
});

const getDocumentRelationships = defineTool({
  name: "get_document_relationships",
  category: "graph",
  title: "Relationships of a document",
  description:
    "All relationships of a document up to max_depth hops (links in either direction, each document once at its shallowest " +
    "depth, cycles safe), grouped as depth_1..depth_N; deeper entries carry the path from the document.",
  input: z.object({ document_id: z.string().min(1).max(200), max_depth: z.number().int().min(1).max(5).default(2) }),
  output: z.object({
    success: z.literal(true),
    document_id: z.string(),
    relationships: z.record(
      z.string(),
      z.array(
        z.object({
          document_id: z.string(),
          relationship_type: z.string(),
          strength: z.number(),
          path: z.array(z.string()).optional(),
        }),
      ),
    ),
    total_relationships: z.number().int(),
    max_depth_reached: z.number().int(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const reached = await documentRelationships(ctx.scope, input.document_id, input.max_depth);
    const relationships: Record<
      string,
      { document_id: string; relationship_type: string; strength: number; path?: string[] }[]
    > = {};
    for (const r of reached) {
      (relationships[`depth_${r.depth}`] ??= []).push({
        document_id: r.id,
        relationship_type: r.relationshipType,
        strength: r.weight,
        ...(r.depth > 1 ? { path: r.path } : {}),
      });
    }
    return {
      success: true as const,
      document_id: input.document_id,
      relationships,
      total_relationships: reached.length,
      max_depth_reached: reached.reduce((m, r) => Math.max(m, r.depth), 0),
    };
  },
});

const getKnowledgeGraph = defineTool({
  name: "get_knowledge_graph",
  category: "graph",
  title: "The knowledge graph",
  description:
    "The knowledge graph as nodes and edges, for drawing or analysis: every link between items (relationships, auto-links, context " +
    "links counted to the chunk's item) and between conversations. Nodes are the items and conversations with at least one link, most " +
    "connected first, at most max_nodes; edges are the links among them. Filter by project and relationship types.",
  input: z.object({
    project: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("Only links whose two ends lie in this project; default: every project the key may read."),
    relationship_types: z.array(z.string().min(1).max(100)).max(20).optional(),
    max_nodes: z.number().int().min(1).max(5000).default(500),
  }),
  output: z.object({
    nodes: z.array(
      z.object({
        id: z.string(),
        node_type: z.enum(["item", "conversation"]),
        project: z.string(),
        kind: z.string(),
        type: z.string(),
        label: z.string(),
        tokens: z.number().int(),
        importance: z.number().nullable(),
        degree: z.number().int(),
      }),
    ),
    edges: z.array(
      z.object({
        source: z.string(),
        source_type: z.string(),
        target: z.string(),
        target_type: z.string(),
        relationship_type: z.string(),
        weight: z.number(),
      }),
    ),
    total_nodes: z.number().int(),
    total_edges: z.number().int(),
    truncated: z.boolean(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const graph = await knowledgeGraph(ctx.scope, {
      projects: readableProjects(ctx, input.project),
      relationshipTypes: input.relationship_types,
      maxNodes: input.max_nodes,
    });
    return {
      nodes: graph.nodes.map((n) => ({
        id: n.id,
        node_type: n.nodeType,
        project: n.project,
        kind: n.kind,
        type: n.type,
        label: n.label,
        tokens: n.tokens,
        importance: n.importance,
        degree: n.degree,
      })),
      edges: graph.edges.map((e) => ({
        source: e.source,
        source_type: e.sourceType,
        target: e.target,
        target_type: e.targetType,
        relationship_type: e.relationshipType,
        weight: e.weight,
      })),
      total_nodes: graph.totalNodes,
      total_edges: graph.totalEdges,
      truncated: graph.nodes.length < graph.totalNodes,
    };
  },
});

/** Links between records, and the graph they make. */
export const GRAPH_TOOLS: readonly AnyTool[] = [
  addRelationship,
  getRelatedContexts,
  linkResources,
  storeContextLinksTool,
  getContextLinksForMessage,
  getMessagesForChunk,
  queryGraph,
  autoLinkDocuments,
  getDocumentRelationships,
  getKnowledgeGraph,
];
