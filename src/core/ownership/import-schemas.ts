import { z } from "zod";
import { ITEM_KINDS, type ITEM_TYPES, MAX_ITEM_CHARS, TIERS } from "../memory/item-types";

/** The records of an import, validated: what export-records writes, in any order after the header. */
const name = z.string().min(1).max(200);
const nullableName = name.nullable().default(null);
/** Epoch ms a Date can hold. */
const instant = z.number().int().min(-8.64e15).max(8.64e15);
const tags = z.array(z.string().min(1).max(100)).max(50);

export const itemRecord = z.strictObject({
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
  key: nullableName,
  superseded_by: nullableName,
  generation: z.enum(["young", "old"]).default("young"),
  gc_survival_count: z.number().int().min(0).default(0),
  created_at: instant,
  touched_at: instant.optional(),
});

export type ItemRecord = z.output<typeof itemRecord> & { item_type: (typeof ITEM_TYPES)[number]; line: number };

export const conversationRecord = z.strictObject({
  type: z.literal("conversation"),
  id: name,
  project: name,
  summarized_count: z.number().int().min(0).default(0),
  summarized_tokens: z.number().int().min(0).default(0),
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

export type ConversationRecord = z.output<typeof conversationRecord>;
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
}

export const IMPORT_FORMATS = ["context-edge", "mcp-memory", "mem0"] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];
