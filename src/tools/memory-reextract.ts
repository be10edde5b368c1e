import { z } from "zod";
import { REEXTRACT_CONVERSATIONS, reextract } from "../core/extraction/reextract";
import { reextractDocument } from "../core/extraction/reextract-document";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { conversationIdParam, parseTimestamp, projectName, timestampParam } from "./params";

export const memoryReextract = defineTool({
  name: "memory_reextract",
  category: "memory",
  title: "Extract conversations again",
  description:
    "Read a project's conversations (or one, or their turns since a time) again with the current extraction model " +
    "and contract, after the model changed or windows failed. What is already known is merged (a duplicate only " +
    "adds its sources); what is new is added; memory_history shows a `reextract` event per conversation, then each " +
    `decision. Answers at once; the reading runs in the background. At most ${REEXTRACT_CONVERSATIONS} conversations ` +
    "a call (the most recently active). With `document_id`, that document's chunks instead (memory_ingest_document; " +
    "it extracts from then on). Needs a key with the admin scope.",
  input: z.object({
    project_id: projectName.default("default"),
    conversation_id: conversationIdParam.optional(),
    document_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("A document of the project to read again instead (not with conversation_id)."),
    since: timestampParam.optional().describe("Only turns said at or after this time (ISO 8601 or epoch ms)."),
  }),
  output: z.object({
    project_id: z.string(),
    conversations: z.array(z.string()).describe("The conversations queued to be read again."),
    documents: z.array(z.string()).describe("The document queued to be read again (with document_id)."),
    turns: z.number().int().describe("Turns (or a document's chunks) the jobs will read."),
    truncated: z.boolean().describe("More conversations matched: call again per conversation or with `since`."),
  }),
  annotations: ANNOTATIONS.append,
  scope: "admin",
  handler: async (input, ctx) => {
    const since = parseTimestamp(input.since, "since");
    if (input.document_id !== undefined) {
      if (input.conversation_id !== undefined)
        throw invalidParameter("document_id", "Give conversation_id or document_id, not both");
      const request = { project: input.project_id, documentId: input.document_id };
      const { chunks } = await reextractDocument(ctx.scope, ctx.services, {
        ...request,
        ...(since === undefined ? {} : { since }),
      });
      const documents = chunks > 0 ? [input.document_id] : [];
      return { project_id: input.project_id, conversations: [], documents, turns: chunks, truncated: false };
    }
    const done = await reextract(ctx.scope, ctx.services, {
      project: input.project_id,
      ...(input.conversation_id === undefined ? {} : { conversationId: input.conversation_id }),
      ...(since === undefined ? {} : { since }),
    });
    return { project_id: input.project_id, ...done, documents: [] };
  },
});
