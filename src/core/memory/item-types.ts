/** Which tool family wrote an item. */
export const ITEM_KINDS = ["memory", "document", "message", "segment", "snapshot"] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

/** Content types: a closed list, so a filter on an unknown type is an error, not an empty result. */
export const ITEM_TYPES = [
  "note",
  "document",
  "code",
  "message",
  "log",
  "config",
  "data",
  "decision",
  "error",
  "reference",
  "summary",
  "task",
  "test",
  "snapshot",
] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

export const TIERS = ["active", "stashed", "superseded"] as const;
export type Tier = (typeof TIERS)[number];

/** What memory extraction derives from conversations (src/core/extraction/): the kind of a derived memory. */
export const MEMORY_KINDS = ["fact", "preference", "event", "instruction", "task"] as const;
export type MemoryKind = (typeof MEMORY_KINDS)[number];

/** Seed 003's importance levels on the 0..1 scale items use. */
export const IMPORTANCE_LEVELS = { LOW: 0.25, MEDIUM: 0.5, HIGH: 0.75, CRITICAL: 1 } as const;
export type ImportanceLevel = keyof typeof IMPORTANCE_LEVELS;

/** Largest item content, in characters (a D1 row holds 2 MB; text is stored in the row and the FTS index). */
export const MAX_ITEM_CHARS = 100_000;
/** Most items one memory_batch_store call writes. */
export const MAX_BATCH_ITEMS = 100;

/** The seed 003 level nearest to an importance value. */
export function importanceLevel(value: number): ImportanceLevel {
  return value >= 0.875 ? "CRITICAL" : value >= 0.625 ? "HIGH" : value >= 0.375 ? "MEDIUM" : "LOW";
}

export interface NewItem {
  project: string;
  kind: ItemKind;
  type: ItemType;
  content: string;
  conversationId?: string | null;
  role?: string | null;
  /** Who said a message (e.g. log_chat's agent_name); indexed as context. Defaults to the role. */
  speaker?: string | null;
  tags?: string[];
  importance?: number;
  metadata?: Record<string, unknown>;
  tier?: Tier;
  taskId?: string | null;
  filePath?: string | null;
  lineStart?: number | null;
  lineEnd?: number | null;
  /** Epoch ms; defaults to now (imports pass the original time). */
  createdAt?: number;
  /** A keyed fact: the item supersedes the project's current item of this key (messages have none). */
  key?: string | null;
  /** A message that joins its conversation's project when the conversation exists (`project` is then the fallback). */
  projectFromConversation?: boolean;
  /** A memory extraction derived from conversation turns (`sources`: their item ids). */
  derived?: DerivedFields;
  /** A chunk of a document (memory_ingest_document). */
  document?: DocumentPlace;
}

/** Where a document chunk stands: its document, the page its text starts on (PDF) and its section path. */
export interface DocumentPlace {
  id: string;
  title: string;
  /** The document's version (its SHA-256) and the chunk's place in it: two equal passages are two chunks. */
  sha256: string;
  index: number;
  page: number | null;
  /** "Guide > Install > Linux"; "" before the first heading. */
  section: string;
}

export interface DerivedFields {
  kind: MemoryKind;
  subject: string;
  /** When it became true, epoch ms. */
  validFrom: number;
  sources: string[];
  /** How much of the memory's `when` was given (valid_from is that period's start); null: no `when`. */
  whenPrecision?: WhenPrecision | null;
  /** Who said what it rests on when no user or system turn did; null: a user's or system's word. */
  saidBy?: SaidBy | null;
}

export const WHEN_PRECISIONS = ["day", "month", "year"] as const;
export type WhenPrecision = (typeof WHEN_PRECISIONS)[number];
export const SAID_BY = ["assistant", "tool", "document"] as const;
export type SaidBy = (typeof SAID_BY)[number];

export interface WrittenItem {
  id: string;
  /** Set when identical content already existed in the project: then `id` is that item's id. */
  duplicateOf: string | null;
  project: string;
  tokens: number;
  chunkCount: number;
  createdAt: number;
  /** The items of the same key this write superseded (they stay, as history). */
  superseded: string[];
}
