import { z } from "zod";
import { editItem, getItem, listItems, PREVIEW_CHARS } from "../core/memory/item-browse";
import { ITEM_KINDS, ITEM_TYPES } from "../core/memory/item-types";
import { currentItemOfKey, keyHistory } from "../core/memory/keyed-facts";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { derivedFields, derivedFieldsOf } from "./derived-fields";
import { documentField, documentFieldOf, documentPlaces } from "./document-fields";
import { factKeyParam, iso, parseTimestamp, projectName, readableProjects, tagsParam, timestampParam } from "./params";

// Browsing and correcting stored items one at a time (what the dashboard's memory view shows): a listing
// that needs no query, one item whole, and edits of its tags and importance. Deleting stays
// context_gc_prune's (action "delete"), the one destructive path.

const itemIdParam = z
  .string()
  .min(1)
  .max(200)
  .describe("The item's id (memory id, resource_id, segment_id or message_id).");
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

export const memoryList = defineTool({
  name: "memory_list",
  category: "memory",
  title: "List memories",
  description:
    "List stored items (memories, documents, messages, segments) newest first, without a query: filter by project, kind, type, tags " +
    `(any of) and creation date, page with offset. Each row has the first ${PREVIEW_CHARS} characters of the text; memory_get returns one whole. ` +
    "Use search to rank by relevance instead.",
  input: z.object({
    project: projectName.optional().describe("Only this project/namespace; default: every project the key may read."),
    kinds: z.array(z.enum(ITEM_KINDS)).max(ITEM_KINDS.length).optional(),
    types: z.array(z.enum(ITEM_TYPES)).max(ITEM_TYPES.length).optional(),
    tags: tagsParam.optional().describe("Items carrying any of these tags."),
    after: timestampParam.optional().describe("Only items created at or after (ISO 8601 or epoch ms)."),
    before: timestampParam.optional().describe("Only items created at or before (ISO 8601 or epoch ms)."),
    include_stashed: z.boolean().default(false),
    limit: z.number().int().min(1).max(100).default(50),
    offset: z.number().int().min(0).max(1_000_000).default(0),
  }),
  output: z.object({
    memories: z.array(
      z.object({
        id: z.string(),
        project: z.string(),
        kind: z.string(),
        type: z.string(),
        preview: z.string(),
        truncated: z.boolean(),
        tags: z.array(z.string()),
        importance: z.number(),
        tokens: z.number().int(),
        tier: z.string(),
        pinned: z.boolean(),
        conversation_id: z.string().nullable(),
        role: z.string().nullable(),
        created_at: z.string(),
        ...derivedFields,
        ...documentField,
      }),
    ),
    total: z.number().int(),
    offset: z.number().int(),
    limit: z.number().int(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const page = await listItems(
      ctx.scope,
      {
        projects: readableProjects(ctx, input.project),
        kinds: input.kinds,
        types: input.types,
        tags: input.tags,
        createdAfter: parseTimestamp(input.after, "after"),
        createdBefore: parseTimestamp(input.before, "before"),
        tiers: input.include_stashed ? ["active", "stashed"] : ["active"],
      },
      input.limit,
      input.offset,
    );
    const places = await documentPlaces(ctx.scope, page.items);
    return {
      memories: page.items.map((i) => ({
        id: i.id,
        project: i.project,
        kind: i.kind,
        type: i.type,
        preview: i.preview,
        truncated: i.chars > i.preview.length,
        tags: i.tags,
        importance: i.importance,
        tokens: i.tokens,
        tier: i.tier,
        pinned: i.pinned,
        conversation_id: i.conversationId,
        role: i.role,
        created_at: iso(i.createdAt),
        ...derivedFieldsOf(i.derived),
        ...documentFieldOf(places.get(i.id)),
      })),
      total: page.total,
      offset: input.offset,
      limit: input.limit,
    };
  },
});

export const memoryGet = defineTool({
  name: "memory_get",
  category: "memory",
  title: "Get a memory",
  description:
    "One stored item whole by id (or the current memory of a fact key): its text, tags, importance, tokens, metadata, tier and pin, conversation, its links in both " +
    "directions (to other items, and context links from or to its chunks; strongest first, each with the other item's start), and its " +
    "history: created, embedded, auto-linked, last touched, GC generation and survivals.",
  input: z.object({
    id: itemIdParam.optional(),
    key: factKeyParam.optional().describe("Instead of id: the current memory of this fact key in `namespace`."),
    // No default: a project-limited key reading by id names no project.
    namespace: projectName.optional().describe("With key: the namespace the key lives in (default 'default')."),
    include_history: z
      .boolean()
      .default(false)
      .describe("Add `versions`: every version of the item's key, current first."),
  }),
  output: z.object({
    id: z.string(),
    project: z.string(),
    kind: z.string(),
    type: z.string(),
    content: z.string(),
    tags: z.array(z.string()),
    importance: z.number(),
    tokens: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    tier: z.string(),
    pinned: z.boolean(),
    conversation_id: z.string().nullable(),
    position: z.number().int().nullable(),
    role: z.string().nullable(),
    task_id: z.string().nullable(),
    file_path: z.string().nullable(),
    chunk_count: z.number().int(),
    links: z.array(
      z.object({
        direction: z.enum(["outgoing", "incoming"]),
        relationship_type: z.string(),
        weight: z.number(),
        other_id: z.string(),
        other_kind: z.string(),
        other_type: z.string(),
        other_preview: z.string(),
        created_at: z.string(),
      }),
    ),
    key: z.string().nullable().describe("The fact key it was stored with (memory_store key), or null"),
    superseded_by: z.string().nullable().describe("The item that replaced it under its key; null while current"),
    ...derivedFields,
    ...documentField,
    versions: z
      .array(
        z.object({ id: z.string(), content: z.string(), created_at: z.string(), superseded_by: z.string().nullable() }),
      )
      .optional()
      .describe("With include_history and a key: all versions, current first"),
    history: z.object({
      created_at: z.string(),
      embedded_at: z
        .string()
        .nullable()
        .describe("null while the embed job is pending (vector search does not see it yet)"),
      linked_at: z.string().nullable().describe("null while the auto-link job is pending"),
      last_touched_at: z.string(),
      generation: z.string(),
      gc_survival_count: z.number().int(),
    }),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    if ((input.id === undefined) === (input.key === undefined))
      throw invalidParameter("id", "Give either id, or key (with namespace)");
    const item = await getItem(
      ctx.scope,
      input.id ?? (await currentItemOfKey(ctx.scope, input.namespace ?? "default", input.key!)),
    );
    const versions =
      input.include_history && item.key !== null ? await keyHistory(ctx.scope, item.project, item.key) : undefined;
    const places = await documentPlaces(ctx.scope, [item]);
    return {
      id: item.id,
      project: item.project,
      kind: item.kind,
      type: item.type,
      content: item.content,
      tags: item.tags,
      importance: item.importance,
      tokens: item.tokens,
      metadata: item.metadata,
      tier: item.tier,
      pinned: item.pinned,
      conversation_id: item.conversationId,
      position: item.position,
      role: item.role,
      task_id: item.taskId,
      file_path: item.filePath,
      chunk_count: item.chunkCount,
      links: item.links.map((l) => ({
        direction: l.direction,
        relationship_type: l.relationshipType,
        weight: l.weight,
        other_id: l.otherId,
        other_kind: l.otherKind,
        other_type: l.otherType,
        other_preview: l.otherPreview,
        created_at: iso(l.createdAt),
      })),
      key: item.key,
      superseded_by: item.supersededBy,
      ...derivedFieldsOf(item.derived),
      ...documentFieldOf(places.get(item.id)),
      ...(versions
        ? {
            versions: versions.map((v) => ({
              id: v.id,
              content: v.content,
              created_at: iso(v.createdAt),
              superseded_by: v.supersededBy,
            })),
          }
        : {}),
      history: {
        created_at: iso(item.createdAt),
        embedded_at: isoOrNull(item.embeddedAt),
        linked_at: isoOrNull(item.linkedAt),
        last_touched_at: iso(item.touchedAt),
        generation: item.generation,
        gc_survival_count: item.gcSurvivalCount,
      },
    };
  },
});

export const memoryUpdate = defineTool({
  name: "memory_update",
  category: "memory",
  title: "Update a memory's tags or importance",
  description:
    "Replace a stored item's tags and/or set its importance (0..1). The text is not changed (store a new memory for new text). " +
    "New tags are indexed at once (a stand-alone item is found by its tags) and re-embedded shortly after; cached contexts of the project are invalidated.",
  input: z.object({
    id: itemIdParam,
    tags: tagsParam.optional().describe("The new tags (replace the old ones)."),
    importance: z.number().min(0).max(1).optional(),
  }),
  output: z.object({
    success: z.literal(true),
    id: z.string(),
    project: z.string(),
    tags: z.array(z.string()),
    importance: z.number(),
    reindexed_chunks: z.number().int(),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const edited = await editItem(ctx.scope, ctx.services, input.id, {
      tags: input.tags,
      importance: input.importance,
    });
    return {
      success: true as const,
      id: edited.id,
      project: edited.project,
      tags: edited.tags,
      importance: edited.importance,
      reindexed_chunks: edited.reindexedChunks,
    };
  },
});
