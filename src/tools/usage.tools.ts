import { z } from "zod";
import { contextUsageStatistics } from "../core/conversations/context-links";
import { toolConversations } from "../core/conversations/metrics";
import { ANNOTATIONS, defineTool } from "./registry";


export const getContextUsageStatistics = defineTool({
  name: "get_context_usage_statistics",
  category: "meta",
  title: "Context usage statistics",
  description:
    "Statistics about context usage: context links (message -> chunk), chunks, messages, the most referenced chunks, and " +
    "from the usage log the average tool calls per day and the busiest hour (UTC) over the last 30 days.",
  input: z.object({}),
  output: z.object({
    success: z.literal(true),
    statistics: z.object({
      total_context_links: z.number().int(),
      total_chunks: z.number().int(),
      total_messages: z.number().int(),
      average_links_per_message: z.number(),
      most_referenced_chunks: z.array(z.object({ chunk_id: z.number().int(), reference_count: z.number().int() })),
      context_usage_trends: z.object({ daily_average: z.number(), peak_usage_hour: z.number().int().nullable() }),
    }),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (_input, ctx) => ({ success: true as const, statistics: await contextUsageStatistics(ctx.scope) }),
});

export const getToolConversations = defineTool({
  name: "get_tool_conversations",
  category: "meta",
  title: "Conversations that used a tool",
  description:
    "Conversations in which a tool was called (from the usage log; a call belongs to the conversation its arguments name), " +
    "most recent first, each with its latest summary or opening message.",
  input: z.object({ tool_name: z.string().min(1).max(100), limit: z.number().int().min(1).max(100).default(10) }),
  output: z.object({
    success: z.literal(true),
    tool_name: z.string(),
    conversations: z.array(z.object({ conversation_id: z.string(), usage_count: z.number().int(), last_used: z.string(), context_summary: z.string() })),
    total_conversations: z.number().int(),
    usage_statistics: z.object({ total_invocations: z.number().int(), average_per_conversation: z.number() }),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => ({ success: true as const, tool_name: input.tool_name, ...(await toolConversations(ctx.scope, input.tool_name, input.limit)) }),
});
