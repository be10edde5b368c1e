/** Which tool family wrote an item. */
export const ITEM_KINDS = ["memory", "document", "message", "segment", "snapshot"] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

/** Content types: a closed list, so a filter on an unknown type is an error, not an empty result. */
export const ITEM_TYPES = ["note", "document", "code", "message", "log", "config", "data", "decision", "error", "reference", "summary", "task", "test", "snapshot"] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

export const TIERS = ["active", "stashed", "superseded"] as const;
export type Tier = (typeof TIERS)[number];

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
