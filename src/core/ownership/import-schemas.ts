import { z } from "zod";
import {
  ITEM_KINDS,
  type ITEM_TYPES,
  MAX_ITEM_CHARS,
  MEMORY_KINDS,
  SAID_BY,
  TIERS,
  WHEN_PRECISIONS,
} from "../memory/item-types";

/** The records of an import, validated: what export-records writes, in any order after the header. */
const name = z.string().min(1).max(200);
const nullableName = name.nullable().default(null);
/** Epoch ms a Date can hold. */
const instant = z.number().int().min(-8.64e15).max(8.64e15);
const tags = z.array(z.string().min(1).max(100)).max(50);
const count = z.number().int().min(0);
/** A key as stored: a derived memory's is its subject's slug (up to 200 characters), a dot and its key (up to 100). */
const storageKey = z.string().min(1).max(400).nullable().default(null);
/** An error or reason text as extraction records it. */
const note = z.string().max(10_000).nullable().default(null);

/** What only a derived memory has; `memory_kind` marks one (version 2). */
const DERIVED_ONLY = ["subject", "said_by", "when_precision", "sources"] as const;

export const itemRecord = z
  .strictObject({
    type: z.literal("item"),
    id: name,
    project: name,
    kind: z.enum(ITEM_KINDS),
    conversation_id: nullableName,
    position: z.number().int().min(0).nullable().default(null),
    role: z.string().max(50).nullable().default(null),
    content: z.string().min(1).max(MAX_ITEM_CHARS),
    tags: tags.default([]),
    importance: z.number().min(0).max(1).default(0.5),
    metadata: z.record(z.string(), z.unknown()).default({}),
    tier: z.enum(TIERS).default("active"),
    pinned: z.boolean().default(false),
    task_id: nullableName,
    file_path: z.string().max(1000).nullable().default(null),
    line_start: z.number().int().nullable().default(null),
    line_end: z.number().int().nullable().default(null),
    key: storageKey,
    superseded_by: nullableName,
    generation: z.enum(["young", "old"]).default("young"),
    gc_survival_count: z.number().int().min(0).default(0),
    created_at: instant,
    touched_at: instant.optional(),
    valid_from: instant.nullable().default(null),
    valid_to: instant.nullable().default(null),
    memory_kind: z.enum(MEMORY_KINDS).nullable().default(null),
    subject: name.optional(),
    said_by: z.enum(SAID_BY).nullable().optional(),
    when_precision: z.enum(WHEN_PRECISIONS).nullable().optional(),
    /** The item ids of the turns it was derived from, as the file names them. */
    sources: z.array(name).optional(),
    /** Who said a message, where its metadata (agent_name) and role do not say (version 2). */
    speaker: name.optional(),
    /** A document's chunk: its document (a document record of the file), page and section path (version 3). */
    document_id: name.optional(),
    document_page: z.number().int().min(1).nullable().optional(),
    document_section: z.string().max(2_000).nullable().optional(),
  })
  .superRefine((item, context) => {
    const problem = (path: string, message: string) => context.addIssue({ code: "custom", path: [path], message });
    if (item.speaker !== undefined && item.conversation_id === null)
      problem("speaker", "only a message of a conversation has a speaker");
    if (item.document_id === undefined && (item.document_page != null || item.document_section != null))
      problem("document_id", "a chunk's page or section needs its document_id");
    if (item.document_id !== undefined && item.kind !== "document")
      problem("document_id", `a document's chunk is of kind document, not ${item.kind}`);
    if (item.memory_kind === null) {
      for (const field of DERIVED_ONLY)
        if (item[field] != null) problem(field, "only a derived memory (one with a memory_kind) has this field");
      return;
    }
    if (item.kind !== "memory") problem("memory_kind", `a derived memory is of kind memory, not ${item.kind}`);
    if (item.subject === undefined) problem("subject", "a derived memory names its subject");
    if (item.valid_from === null) problem("valid_from", "a derived memory has a valid_from");
    if (item.sources === undefined) problem("sources", "a derived memory lists its source turns");
  });

export type ItemRecord = z.output<typeof itemRecord> & { item_type: (typeof ITEM_TYPES)[number]; line: number };

export const conversationRecord = z.strictObject({
  type: z.literal("conversation"),
  id: name,
  project: name,
  summarized_count: z.number().int().min(0).default(0),
  summarized_tokens: z.number().int().min(0).default(0),
  // The extraction cursor (version 2): positions below extracted_count have been read.
  extracted_count: count.default(0),
  extracted_tokens: count.default(0),
  next_position: count.default(0),
  extraction_epoch: count.default(0),
  extract_due_at: instant.nullable().default(null),
  created_at: instant,
  updated_at: instant,
});

export const summaryRecord = z.strictObject({
  type: z.literal("summary"),
  conversation_id: name,
  version: z.number().int().min(1),
  summary: z.string().max(MAX_ITEM_CHARS),
  code_blocks: z.array(z.unknown()).default([]),
  key_insights: z.array(z.unknown()).default([]),
  importance_score: z.number(),
  message_count: z.number().int().min(0),
  tokens_used: z.number().int().min(0),
  token_limit: z.number().int().min(0),
  created_at: instant,
});

export const projectTaskRecord = z.strictObject({
  type: z.literal("project_task"),
  project: name,
  current_task_id: nullableName,
  previous_task_id: nullableName,
  updated_at: instant,
});

/** A link end: an item or conversation id, or a chunk as "<item id>#<index>". */
export const linkRecord = z.strictObject({
  type: z.literal("link"),
  id: name,
  source_type: z.string().min(1).max(50),
  source_id: z.string().min(1).max(250),
  target_type: z.string().min(1).max(50),
  target_id: z.string().min(1).max(250),
  relationship_type: z.string().min(1).max(100),
  weight: z.number().min(0).max(1),
  metadata: z.record(z.string(), z.unknown()).default({}),
  created_at: instant,
});

/** A project's memory settings (version 2). */
export const projectSettingsRecord = z.strictObject({
  type: z.literal("project_settings"),
  project: name,
  extract: z.boolean().nullable().default(null),
  default_subject: nullableName,
  subject_aliases: z.record(name, name).nullable().default(null),
  updated_at: instant,
});

/** A window of a conversation as extraction read it, with its cost (version 2). */
export const extractionWindowRecord = z.strictObject({
  type: z.literal("extraction_window"),
  id: name,
  project: name,
  conversation_id: name,
  /** A window of a document's chunks: the document (conversation_id names it too). */
  document_id: nullableName,
  first_position: count,
  last_position: count,
  status: z.string().min(1).max(50),
  calls: count.default(0),
  model: z.string().min(1).max(200),
  tokens_in: count.default(0),
  tokens_out: count.default(0),
  neurons: count.default(0),
  latency_ms: count.default(0),
  turns: count.default(0),
  error: note,
  created_at: instant,
  attempts: z.number().int().min(1).default(1),
  retry_at: instant.nullable().default(null),
});

/** One decision extraction made (version 2); its item ids as the file names them. */
export const memoryEventRecord = z.strictObject({
  type: z.literal("memory_event"),
  id: name,
  project: name,
  at: instant,
  event: z.string().min(1).max(50),
  memory_id: nullableName,
  key: storageKey,
  conversation_id: nullableName,
  document_id: nullableName,
  window_id: nullableName,
  sources: z.array(name).default([]),
  superseded_by: nullableName,
  error: note,
  reason: note,
});

/**
 * A document (version 3): its metadata, its Markdown (what search and citations were made from) and, when the export
 * asked for them, its original's bytes. Its chunks are the item records that name it.
 */
export const documentRecord = z.strictObject({
  type: z.literal("document"),
  id: name,
  project: name,
  document_key: z.string().min(1).max(200).nullable().default(null),
  title: z.string().min(1).max(500),
  file_name: z.string().max(500).nullable().default(null),
  url: z.string().max(4_000).nullable().default(null),
  mime_type: z.string().min(1).max(200),
  bytes: count,
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "a SHA-256 as 64 lowercase hex digits"),
  pages: count.nullable().default(null),
  status: z.enum(["ready", "converting", "failed"]).default("ready"),
  error: z.string().max(10_000).nullable().default(null),
  sections: z
    .array(z.strictObject({ section: z.string().max(2_000), page: count.nullable(), tokens: count, chunks: count }))
    .max(100_000),
  chunks: count,
  tokens: count,
  tags: tags.default([]),
  metadata: z.record(z.string(), z.unknown()).default({}),
  /** Memories are extracted from its chunks, this far (its cursor), under this epoch (memory_reextract's). */
  extract: z.boolean().default(false),
  extracted_count: count.default(0),
  extraction_epoch: count.default(0),
  created_at: instant,
  updated_at: instant,
  markdown: z.string().nullable().default(null),
  original_base64: z.string().optional(),
});

export type ConversationRecord = z.output<typeof conversationRecord>;
export type DocumentRecord = z.output<typeof documentRecord> & { line: number };
export type ProjectSettingsRecord = z.output<typeof projectSettingsRecord> & { line: number };
export type ExtractionWindowRecord = z.output<typeof extractionWindowRecord> & { line: number };
export type MemoryEventRecord = z.output<typeof memoryEventRecord> & { line: number };
export type SummaryRecord = z.output<typeof summaryRecord>;
export type ProjectTaskRecord = z.output<typeof projectTaskRecord>;
export type LinkRecord = z.output<typeof linkRecord>;

export interface ImportRecords {
  format: ImportFormat;
  conversations: ConversationRecord[];
  items: ItemRecord[];
  summaries: SummaryRecord[];
  projectTasks: ProjectTaskRecord[];
  links: LinkRecord[];
  projectSettings: ProjectSettingsRecord[];
  extractionWindows: ExtractionWindowRecord[];
  memoryEvents: MemoryEventRecord[];
  documents: DocumentRecord[];
}

export const IMPORT_FORMATS = ["context-edge", "mcp-memory", "mem0"] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];
