import { z } from "zod";
import {
  conversationEdges,
  conversationNotFound,
  latestSummary,
  listConversations,
  readConversationWhole,
  requireConversation,
  type StoredSummary,
  summarizeConversation,
} from "../core/conversations/conversations";
import { contextMetrics } from "../core/conversations/metrics";
import { contextText, mermaidDiagram } from "../core/conversations/visualize";
import { traverseLinks } from "../core/graph/graph";
import { IMPORTANCE_LEVELS, importanceLevel, type NewItem, type WrittenItem } from "../core/memory/item-types";
import { writeItems } from "../core/memory/items";
import { searchChunks } from "../core/search/search";
import { ANNOTATIONS, type AnyTool, defineTool } from "./define-tool";
import { itemWrites } from "./item-writes";
import { bestPerKey } from "./memory-search";
import {
  contentParam,
  conversationIdParam,
  idempotencyKeyParam,
  iso,
  keyedCall,
  metadataParam,
  parseTimestamp,
  projectName,
  queryParam,
  readableProjects,
  tagsParam,
  timestampParam,
} from "./params";

const logChatInput = z.object({
  conversation_id: conversationIdParam,
  role: z.enum(["user", "assistant", "system", "tool"]),
  content: contentParam,
  agent_name: z.string().max(200).optional(),
  project_id: projectName.default("default"),
  tags: tagsParam.default([]),
  metadata: metadataParam.default({}),
  timestamp: timestampParam.optional().describe("When the message was said (ISO 8601 or epoch ms); defaults to now."),
  idempotency_key: idempotencyKeyParam,
});

const logChat = defineTool({
  name: "log_chat",
  category: "conversation",
  title: "Log a chat message",
  description:
    "Log chat messages with context: appends one message to a conversation (created on first use), searchable with " +
    "search and readable around a hit with get_context. Returns the message id for linking.",
  input: logChatInput,
  output: z.object({
    success: z.literal(true),
    message_id: z.string(),
    conversation_id: z.string(),
    tokens: z.number().int(),
    timestamp: z.string(),
  }),
  annotations: ANNOTATIONS.append,
  // A JSON-RPC batch of messages is one atomic write, in the batch's order.
  ...itemWrites(logChatItem, logChatResult, (input) => keyedCall("log_chat", input, input.project_id)),
});

type LogChatInput = z.output<typeof logChatInput>;

function logChatItem(input: LogChatInput): NewItem {
  return {
    project: input.project_id,
    kind: "message",
    type: "message",
    content: input.content,
    conversationId: input.conversation_id,
    role: input.role,
    speaker: input.agent_name,
    tags: input.tags,
    metadata: input.agent_name ? { ...input.metadata, agent_name: input.agent_name } : input.metadata,
    createdAt: parseTimestamp(input.timestamp, "timestamp"),
  };
}

function logChatResult(input: LogChatInput, written: WrittenItem) {
  return {
    success: true as const,
    message_id: written.id,
    conversation_id: input.conversation_id,
    tokens: written.tokens,
    timestamp: iso(written.createdAt),
  };
}

const addMessage = defineTool({
  name: "add_message",
  category: "conversation",
  core: true,
  title: "Add a message to a context",
  description: "Add a message (user or assistant) to a specific context. Creates the context if it doesn't exist.",
  input: z.object({
    contextId: conversationIdParam,
    message: contentParam,
    role: z.enum(["user", "assistant"]),
    importance: z.enum(["LOW", "MEDIUM", "HIGH", "CRITICAL"]).default("MEDIUM"),
    tags: tagsParam.default([]),
  }),
  output: z.object({ success: z.literal(true), messageId: z.string() }),
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => {
    // A message joins its conversation's project (seed 003 names none), learnt in the write's own read;
    // a new conversation starts in "default".
    const [written] = await writeItems(ctx.scope, ctx.services, [
      {
        project: "default",
        projectFromConversation: true,
        kind: "message",
        type: "message",
        content: input.message,
        conversationId: input.contextId,
        role: input.role,
        tags: input.tags,
        importance: IMPORTANCE_LEVELS[input.importance],
      },
    ]);
    return { success: true as const, messageId: written!.id };
  },
});

const messageShape = z.object({
  role: z.string(),
  content: z.string(),
  importance: z.enum(["LOW", "MEDIUM", "HIGH", "CRITICAL"]),
  tags: z.array(z.string()),
  timestamp: z.number(),
});
const summaryShape = z.object({
  contextId: z.string(),
  createdAt: z.number(),
  summary: z.string(),
  codeBlocks: z.array(z.string()),
  messageCount: z.number().int(),
  version: z.number().int(),
  keyInsights: z.array(z.string()),
  importanceScore: z.number(),
  tokensUsed: z.number().int(),
  tokenLimit: z.number().int(),
});

function summaryView(s: StoredSummary): z.infer<typeof summaryShape> {
  return {
    contextId: s.conversationId,
    createdAt: s.createdAt,
    summary: s.summary,
    codeBlocks: s.codeBlocks,
    messageCount: s.messageCount,
    version: s.version,
    keyInsights: s.keyInsights,
    importanceScore: s.importanceScore,
    tokensUsed: s.tokensUsed,
    tokenLimit: s.tokenLimit,
  };
}

const retrieveContext = defineTool({
  name: "retrieve_context",
  category: "conversation",
  core: true,
  title: "Retrieve a context",
  description: "Retrieve all messages and the latest summary for a given context ID, oldest message first.",
  input: z.object({ contextId: conversationIdParam }),
  output: z.object({
    success: z.literal(true),
    contextId: z.string(),
    messages: z.array(messageShape),
    hasSummary: z.boolean(),
    summary: summaryShape.nullable(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const whole = await readConversationWhole(ctx.scope, input.contextId);
    if (!whole) throw conversationNotFound(input.contextId);
    const { messages, summary } = whole;
    return {
      success: true as const,
      contextId: input.contextId,
      messages: messages.map((m) => ({
        role: m.role,
        content: m.content,
        importance: importanceLevel(m.importance),
        tags: m.tags,
        timestamp: m.createdAt,
      })),
      hasSummary: summary !== null,
      summary: summary ? summaryView(summary) : null,
    };
  },
});

const summarizeContext = defineTool({
  name: "summarize_context",
  category: "conversation",
  core: true,
  title: "Summarize a context",
  description:
    "Generate a new summary version for a context: key sentences within the summary token limit, code blocks kept verbatim, " +
    "key insights and an importance score (0..1). Contexts are also summarized automatically every 5 new messages.",
  input: z.object({ contextId: conversationIdParam }),
  output: summaryShape,
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => {
    const summary = await summarizeConversation(ctx.scope, ctx.services, input.contextId);
    if (!summary) throw conversationNotFound(input.contextId); // deleted while it was being summarized
    return summaryView(summary);
  },
});

const visualizeContext = defineTool({
  name: "visualize_context",
  category: "conversation",
  title: "Visualize a context",
  description:
    "Visualize a context and its related contexts as JSON, a Mermaid flowchart or text; without contextId, list the sessions " +
    "(contexts, most recent first). depth (1-3) is how many relationship hops to follow.",
  input: z.object({
    contextId: conversationIdParam.optional(),
    includeRelated: z.boolean().default(true),
    depth: z.number().int().min(1).max(3).default(1),
    format: z.enum(["json", "mermaid", "text"]).default("json"),
  }),
  output: z.object({
    success: z.literal(true),
    contextId: z.string().optional(),
    format: z.string().optional(),
    messageCount: z.number().int().optional(),
    hasSummary: z.boolean().optional(),
    summary: z.string().nullable().optional(),
    relatedContexts: z.array(z.string()).optional(),
    text: z.string().optional(),
    diagram: z.string().optional(),
    sessions: z.array(z.string()).optional(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    if (input.contextId === undefined) {
      return {
        success: true as const,
        sessions: await listConversations(ctx.scope, readableProjects(ctx, undefined)),
        format: input.format,
      };
    }
    const conversation = await requireConversation(ctx.scope, input.contextId);
    const summary = await latestSummary(ctx.scope, input.contextId);
    const reached = input.includeRelated
      ? await traverseLinks(ctx.scope, "conversation", new Map([[input.contextId, 1]]), {
          maxDepth: input.depth,
          maxResults: 100,
        })
      : [];
    const related = reached.map((r) => r.id);
    const view = {
      contextId: input.contextId,
      messageCount: conversation.messageCount,
      hasSummary: summary !== null,
      summary: summary?.summary ?? null,
      relatedContexts: related,
    };
    if (input.format === "text")
      return { success: true as const, contextId: input.contextId, format: "text", text: contextText(view) };
    if (input.format === "mermaid") {
      const nodes = new Set([input.contextId, ...related]);
      const edges = (await Promise.all([...nodes].map((id) => conversationEdges(ctx.scope, id, "outgoing"))))
        .flat()
        .filter((e) => nodes.has(e.targetId))
        .map((e) => ({ from: e.sourceId, to: e.targetId, type: e.type }));
      return { success: true as const, format: "mermaid", diagram: mermaidDiagram(input.contextId, related, edges) };
    }
    return { success: true as const, ...view };
  },
});

const getContextMetrics = defineTool({
  name: "get_context_metrics",
  category: "conversation",
  title: "Context usage metrics",
  description:
    "Usage metrics for this tenant over a period: tool calls (total, by tool, per day), averageScore = mean importance (0..1) " +
    "of messages written in the period, context statistics and relationships between contexts by type.",
  input: z.object({ period: z.enum(["day", "week", "month"]).default("week") }),
  output: z.object({
    success: z.literal(true),
    metrics: z.object({
      averageScore: z.number(),
      totalCalls: z.number().int(),
      byType: z.record(z.string(), z.number()),
      historyTrend: z.array(z.object({ date: z.string(), count: z.number().int() })),
      contextStats: z.object({
        totalContexts: z.number().int(),
        averageMessagesPerContext: z.number(),
        summaryRate: z.number(),
      }),
      relationshipMetrics: z.object({ totalRelationships: z.number().int(), byType: z.record(z.string(), z.number()) }),
    }),
    period: z.string(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => ({
    success: true as const,
    metrics: await contextMetrics(ctx.scope, input.period),
    period: input.period,
  }),
});

const getSimilarContexts = defineTool({
  name: "get_similar_contexts",
  category: "conversation",
  core: true,
  title: "Find similar contexts",
  description:
    "Find contexts (conversations) that are semantically similar to a query; one entry per context, most similar first. " +
    "similarity is the search score (0..1, absolute) of the context's best-matching message; no entry when nothing is relevant.",
  input: z.object({
    query: queryParam,
    limit: z.number().int().min(1).max(50).default(5),
  }),
  output: z.array(z.object({ contextId: z.string(), similarity: z.number() })),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const hits = await searchChunks(
      ctx.scope,
      ctx.services,
      input.query,
      { projects: readableProjects(ctx, undefined), kinds: ["message"] },
      100,
    );
    return bestPerKey(
      hits.filter((h) => h.conversationId !== null),
      (h) => h.conversationId!,
    )
      .slice(0, input.limit)
      .map((h) => ({ contextId: h.conversationId!, similarity: h.score }));
  },
});

/** Conversations: log, read, summarize, find similar, visualize, measure. */
export const CONVERSATION_TOOLS: readonly AnyTool[] = [
  addMessage,
  logChat,
  retrieveContext,
  summarizeContext,
  getSimilarContexts,
  visualizeContext,
  getContextMetrics,
];
