import { z } from "zod";
import { REEXTRACT_CONVERSATIONS, reextract } from "../core/extraction/reextract";
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
    "a call (the most recently active). Needs a key with the admin scope.",
  input: z.object({
    project_id: projectName.default("default"),
    conversation_id: conversationIdParam.optional(),
    since: timestampParam.optional().describe("Only turns said at or after this time (ISO 8601 or epoch ms)."),
  }),
  output: z.object({
    project_id: z.string(),
    conversations: z.array(z.string()).describe("The conversations queued to be read again."),
    turns: z.number().int(),
    truncated: z.boolean().describe("More conversations matched: call again per conversation or with `since`."),
  }),
  annotations: ANNOTATIONS.append,
  scope: "admin",
  handler: async (input, ctx) => {
    const since = parseTimestamp(input.since, "since");
    const done = await reextract(ctx.scope, ctx.services, {
      project: input.project_id,
      ...(input.conversation_id === undefined ? {} : { conversationId: input.conversation_id }),
      ...(since === undefined ? {} : { since }),
    });
    return { project_id: input.project_id, ...done };
  },
});
