import { z } from "zod";
import { ingestConversation, MAX_INGEST_MESSAGES } from "../core/extraction/ingest";
import type { NewItem } from "../core/memory/item-types";
import { ANNOTATIONS, defineTool } from "./define-tool";
import {
  contentParam,
  conversationIdParam,
  idempotencyKeyParam,
  keyedCall,
  parseTimestamp,
  projectName,
  timestampParam,
} from "./params";

// Conversations in bulk, to learn from (docs/extraction.md).

const ingestMessage = z
  .object({
    role: z.enum(["user", "assistant", "system", "tool"]),
    content: contentParam,
    speaker: z.string().trim().min(1).max(200).optional().describe("Who said it (a name); defaults to the role."),
    timestamp: timestampParam
      .optional()
      .describe("When it was said (ISO 8601 or epoch ms); relative times in it are resolved against this."),
  })
  .strict();

export const memoryIngest = defineTool({
  name: "memory_ingest",
  category: "memory",
  title: "Ingest a conversation",
  description:
    `Store one conversation of up to ${MAX_INGEST_MESSAGES} messages at once, in order, and (where extraction is on) ` +
    "queue the extraction of durable memories from it: facts, preferences, events, instructions and tasks, each with " +
    "its subject and the ids of the turns it came from. Answers at once with the stored message ids; the memories " +
    "follow within seconds (memory_history with conversation_id shows each decision). `extract` overrides the " +
    "project's setting for this call.",
  input: z.object({
    conversation_id: conversationIdParam,
    project_id: projectName.default("default"),
    messages: z.array(ingestMessage).min(1).max(MAX_INGEST_MESSAGES),
    extract: z.boolean().optional().describe("Extract memories from it; default: the project's setting."),
    idempotency_key: idempotencyKeyParam,
  }),
  output: z.object({
    conversation_id: z.string(),
    project_id: z.string(),
    ids: z.array(z.string()).describe("The stored messages' ids, in the order given."),
    extraction: z.enum(["queued", "off"]),
  }),
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => {
    const messages: NewItem[] = input.messages.map((m, i) => ({
      project: input.project_id,
      kind: "message",
      type: "message",
      content: m.content,
      conversationId: input.conversation_id,
      role: m.role,
      speaker: m.speaker,
      createdAt: parseTimestamp(m.timestamp, `messages[${i}].timestamp`),
    }));
    const keyed = keyedCall("memory_ingest", input, input.project_id);
    const ingested = await ingestConversation(ctx.scope, ctx.services, messages, input.extract, keyed);
    return { conversation_id: input.conversation_id, project_id: input.project_id, ...ingested };
  },
});
