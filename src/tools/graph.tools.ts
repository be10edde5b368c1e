import { z } from "zod";
import { linkItems, RESOURCE_RELATIONSHIPS } from "../core/links";
import { iso } from "./params";
import { defineTool } from "./registry";

export const linkResources = defineTool({
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
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  handler: async (input, ctx) => {
    const link = await linkItems(ctx.scope, { sourceId: input.source_id, targetId: input.target_id, relationshipType: input.relationship_type, weight: input.weight });
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
