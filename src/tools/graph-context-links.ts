import { z } from "zod";
import { contextLinksForMessage, messagesForChunk, storeContextLinks } from "../core/conversations/context-links";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { iso } from "./params";

// Seed 003's context links: messages pointing at the chunks they drew on, read from either end.

const chunkIdParam = z.number().int().min(1);

export const storeContextLinksTool = defineTool({
  name: "store_context_links",
  category: "graph",
  title: "Link a message to chunks",
  description:
    "Store links between a message and the document chunks that informed it (chunk ids from search). link_strength is the " +
    "embedding similarity of message and chunk (1 when either is not embedded yet). All ids must exist, else nothing is stored.",
  input: z.object({ message_id: z.string().min(1).max(200), chunk_ids: z.array(chunkIdParam).min(1).max(100) }),
  output: z.object({
    success: z.literal(true),
    links_created: z.number().int(),
    message_id: z.string(),
    linked_chunks: z.array(z.number().int()),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const linked = await storeContextLinks(ctx.scope, ctx.services, input.message_id, input.chunk_ids);
    return {
      success: true as const,
      links_created: linked.length,
      message_id: input.message_id,
      linked_chunks: linked,
    };
  },
});

export const getContextLinksForMessage = defineTool({
  name: "get_context_links_for_message",
  category: "graph",
  title: "Context links of a message",
  description:
    "Retrieve the chunks a message is linked to (store_context_links), strongest first, with their content and resource id.",
  input: z.object({ message_id: z.string().min(1).max(200) }),
  output: z.object({
    success: z.literal(true),
    message_id: z.string(),
    context_links: z.array(
      z.object({ chunk_id: z.number().int(), content: z.string(), resource_id: z.string(), link_strength: z.number() }),
    ),
    total_links: z.number().int(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const links = await contextLinksForMessage(ctx.scope, input.message_id);
    return {
      success: true as const,
      message_id: input.message_id,
      context_links: links.map((l) => ({
        chunk_id: l.chunkId,
        content: l.content,
        resource_id: l.resourceId,
        link_strength: l.strength,
      })),
      total_links: links.length,
    };
  },
});

export const getMessagesForChunk = defineTool({
  name: "get_messages_for_chunk",
  category: "graph",
  title: "Messages that reference a chunk",
  description: "Get the messages linked to a document chunk (store_context_links), newest first.",
  input: z.object({ chunk_id: chunkIdParam }),
  output: z.object({
    success: z.literal(true),
    chunk_id: z.number().int(),
    messages: z.array(
      z.object({
        message_id: z.string(),
        content: z.string(),
        conversation_id: z.string().nullable(),
        timestamp: z.string(),
      }),
    ),
    total_messages: z.number().int(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const messages = await messagesForChunk(ctx.scope, input.chunk_id);
    return {
      success: true as const,
      chunk_id: input.chunk_id,
      messages: messages.map((m) => ({
        message_id: m.messageId,
        content: m.content,
        conversation_id: m.conversationId,
        timestamp: iso(m.createdAt),
      })),
      total_messages: messages.length,
    };
  },
});
