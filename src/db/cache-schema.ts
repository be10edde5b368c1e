import { blob, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// The semantic cache's tables (src/core/context/): generations, the index of entries whose values live in KV, link
// marks and counters; schema.ts re-exports them, so drizzle-kit, the moves' table list and the tenant deletion see them
// with every other shard table.

/**
 * Semantic cache generation per project, bumped in the same D1 batch as any write to the project,
 * so a cached context is never older than the last write (KV alone is eventually consistent).
 */
export const cacheGenerations = sqliteTable(
  "cache_generations",
  {
    tenantId: text("tenant_id").notNull(),
    project: text("project").notNull(),
    generation: integer("generation").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.project] })],
);

/**
 * The semantic cache's index and, up to CACHE_VALUE_IN_D1 bytes, its values (larger ones live in KV under `key`). A
 * lookup reads the entries of one (project, generation, parameters) and compares query vectors; this table is also
 * what stats, clear and size-bounded eviction count, so their numbers are exact.
 */
export const cacheEntries = sqliteTable(
  "cache_entries",
  {
    tenantId: text("tenant_id").notNull(),
    key: text("key").notNull(),
    project: text("project").notNull(),
    generation: integer("generation").notNull(),
    paramsHash: text("params_hash").notNull(),
    query: text("query").notNull(),
    vector: blob("vector", { mode: "buffer" }).notNull(),
    /** UTF-8 bytes of the cached value. */
    bytes: integer("bytes").notNull(),
    /** The cached value (JSON); NULL when it is kept in KV. */
    value: text("value"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /** The tenant's link clock when the context was built (cache_link_clock). */
    linkSeq: integer("link_seq").notNull().default(0),
    /** Items whose links the context followed (JSON array); a later link change to one of them drops it. */
    linkItems: text("link_items").notNull().default("[]"),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.key] }),
    index("cache_entries_lookup").on(t.tenantId, t.project, t.generation, t.paramsHash),
    index("cache_entries_age").on(t.tenantId, t.createdAt),
  ],
);

/**
 * Link changes, for the semantic cache: a per-tenant clock that only moves forward, and for each item
 * the clock value of the last new or strengthened link touching it. A cached context records the
 * items whose links it followed and is served only while none of them has a later mark; a link
 * elsewhere in the project leaves it alone (src/core/context/cache-generation.ts).
 */
export const cacheLinkClock = sqliteTable("cache_link_clock", {
  tenantId: text("tenant_id").primaryKey(),
  seq: integer("seq").notNull(),
});

export const cacheLinkMarks = sqliteTable(
  "cache_link_marks",
  {
    tenantId: text("tenant_id").notNull(),
    itemId: text("item_id").notNull(),
    /** The item's project, so deleting a project removes its marks. */
    project: text("project").notNull(),
    seq: integer("seq").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.itemId] }), index("cache_link_marks_project").on(t.tenantId, t.project)],
);

export const cacheCounters = sqliteTable("cache_counters", {
  tenantId: text("tenant_id").primaryKey(),
  hits: integer("hits").notNull().default(0),
  misses: integer("misses").notNull().default(0),
});
