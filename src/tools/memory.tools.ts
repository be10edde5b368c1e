import { z } from "zod";
import { MAX_BATCH_ITEMS, type NewItem } from "../core/memory/item-types";
import { writeItems } from "../core/memory/items";
import { strictInput } from "../validation";
import { ANNOTATIONS, type AnyTool, defineTool } from "./define-tool";
import { itemWrites } from "./item-writes";
import { memoryDeleteDocument, memoryGetDocument, memoryIngestDocument } from "./memory-documents";
import { memoryIngest } from "./memory-ingest";
import { memoryGet, memoryList, memoryUpdate } from "./memory-items";
import { memoryListDocuments } from "./memory-list-documents";
import { memoryHistory, memoryProfile } from "./memory-profile";
import { memoryReextract } from "./memory-reextract";
import { retrieveByType, search } from "./memory-search";
import { memorySettings } from "./memory-settings";
import { contentParam, factKeyParam, iso, itemTypeParam, metadataParam, projectName, tagsParam } from "./params";

const storeMemoryInput = z.object({
  file_name: z.string().min(1).max(500).describe("Name or path of the document."),
  content: contentParam,
  resource_type: itemTypeParam.default("document").describe("Type used by retrieve_by_type."),
  project_id: projectName.default("default"),
  tags: tagsParam.default([]),
  metadata: metadataParam.default({}),
});

const storeMemory = defineTool({
  name: "store_memory",
  category: "memory",
  core: true,
  title: "Store a document",
  description:
    "Store documents with vector indexing: the text is chunked, counted in tokens, indexed for keyword search at once " +
    "and embedded for semantic search shortly after. Identical content already stored in the project is not stored " +
    "twice; duplicate_of then names the existing resource.",
  input: storeMemoryInput,
  output: z.object({
    success: z.literal(true),
    resource_id: z.string(),
    file_name: z.string(),
    chunk_count: z.number().int(),
    tokens: z.number().int(),
    duplicate_of: z.string().nullable(),
  }),
  annotations: ANNOTATIONS.write,
  ...itemWrites(
    (input: z.output<typeof storeMemoryInput>): NewItem => ({
      project: input.project_id,
      kind: "document",
      type: input.resource_type,
      content: input.content,
      tags: input.tags,
      filePath: input.file_name,
      metadata: { ...input.metadata, file_name: input.file_name },
    }),
    (input, written) => ({
      success: true as const,
      resource_id: written.id,
      file_name: input.file_name,
      chunk_count: written.chunkCount,
      tokens: written.tokens,
      duplicate_of: written.duplicateOf,
    }),
  ),
});

const memoryFields = {
  content: contentParam,
  tags: tagsParam.default([]),
  importance: z
    .number()
    .min(0)
    .max(1)
    .default(0.5)
    .describe("0..1; raises the memory under the 'importance' strategy."),
  metadata: metadataParam.default({}),
  type: itemTypeParam.default("note"),
  key: factKeyParam.optional(),
};

const memoryStoreInput = z.object({ ...memoryFields, namespace: projectName.default("default") });

const memoryStore = defineTool({
  name: "memory_store",
  category: "memory",
  core: true,
  title: "Store a memory",
  description:
    "Store one memory (a fact, preference, decision, snippet) in a namespace. Token count is computed once and stored; " +
    "with a key (e.g. user.city) it replaces the namespace's current memory of that key, which stays as history (memory_get with include_history); " +
    "identical content already in the namespace returns the existing id with duplicate: true.",
  input: memoryStoreInput,
  output: z.object({
    success: z.literal(true),
    id: z.string(),
    namespace: z.string(),
    tokens: z.number().int(),
    created_at: z.string(),
    duplicate: z.boolean(),
    duplicate_of: z.string().nullable(),
    key: z.string().nullable().describe("The fact's key, when one was given"),
    superseded: z
      .array(z.string())
      .describe("Ids of the earlier items of this key that this one replaced (kept as history)"),
  }),
  annotations: ANNOTATIONS.write,
  ...itemWrites(
    (input: z.output<typeof memoryStoreInput>): NewItem => ({
      project: input.namespace,
      kind: "memory",
      type: input.type,
      content: input.content,
      tags: input.tags,
      importance: input.importance,
      metadata: input.metadata,
      key: input.key,
    }),
    (input, written) => ({
      success: true as const,
      id: written.id,
      namespace: input.namespace,
      tokens: written.tokens,
      created_at: iso(written.createdAt),
      duplicate: written.duplicateOf !== null,
      duplicate_of: written.duplicateOf,
      key: input.key ?? null,
      superseded: written.superseded,
    }),
  ),
});

const memoryBatchStore = defineTool({
  name: "memory_batch_store",
  category: "memory",
  title: "Store many memories",
  description: `Store up to ${MAX_BATCH_ITEMS} memories in one call, all or nothing: if any memory is invalid, none is stored. Ids come back in input order; duplicates name the existing id.`,
  input: z.object({
    memories: z
      .array(strictInput(z.object(memoryFields)))
      .min(1)
      .max(MAX_BATCH_ITEMS),
    namespace: projectName.default("default"),
  }),
  output: z.object({
    success: z.literal(true),
    ids: z.array(z.string()),
    stored: z.number().int(),
    duplicates: z.number().int(),
    namespace: z.string(),
    total_tokens: z.number().int(),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const written = await writeItems(
      ctx.scope,
      ctx.services,
      input.memories.map((m) => ({
        project: input.namespace,
        kind: "memory" as const,
        type: m.type,
        content: m.content,
        tags: m.tags,
        importance: m.importance,
        metadata: m.metadata,
        key: m.key,
      })),
    );
    const duplicates = written.filter((w) => w.duplicateOf !== null).length;
    return {
      success: true as const,
      ids: written.map((w) => w.id),
      stored: written.length - duplicates,
      duplicates,
      namespace: input.namespace,
      total_tokens: written.reduce((sum, w) => sum + w.tokens, 0),
    };
  },
});

/** Store, search, browse and correct memories; ingest conversations and read what was learned from them. */
export const MEMORY_TOOLS: readonly AnyTool[] = [
  memoryStore,
  memoryBatchStore,
  storeMemory,
  search,
  retrieveByType,
  memoryList,
  memoryGet,
  memoryUpdate,
  memoryIngest,
  memoryIngestDocument,
  memoryGetDocument,
  memoryListDocuments,
  memoryDeleteDocument,
  memoryProfile,
  memoryHistory,
  memorySettings,
  memoryReextract,
];
