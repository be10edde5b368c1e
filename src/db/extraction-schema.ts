import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Extraction's own tables (src/core/extraction/); schema.ts re-exports them. Derived memories themselves are items.

/** Which turns a derived memory came from, by source: deleting a turn finds what was derived from it. */
export const memorySources = sqliteTable(
  "memory_sources",
  {
    tenantId: text("tenant_id").notNull(),
    sourceId: text("source_id").notNull(),
    memoryId: text("memory_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.sourceId, t.memoryId] })],
);

/**
 * One window of a conversation as extraction read it; its id hashes the window (tenant, conversation, turns), so a
 * redelivered or re-run window is found done and adds nothing. Model, tokens, neurons and latency are its cost.
 */
export const extractionWindows = sqliteTable(
  "extraction_windows",
  {
    tenantId: text("tenant_id").notNull(),
    id: text("id").notNull(),
    project: text("project").notNull(),
    /** The conversation read, or the document (then document_id says so). */
    conversationId: text("conversation_id").notNull(),
    /** A window of a document's chunks: the document's id (also in conversation_id); NULL for a conversation's. */
    documentId: text("document_id"),
    firstPosition: integer("first_position").notNull(),
    lastPosition: integer("last_position").notNull(),
    /** done | failed (retried at retry_at while it is set) */
    status: text("status").notNull(),
    /** Model calls the window took (a malformed answer is asked again once). */
    calls: integer("calls").notNull().default(0),
    model: text("model").notNull(),
    tokensIn: integer("tokens_in").notNull().default(0),
    tokensOut: integer("tokens_out").notNull().default(0),
    neurons: integer("neurons").notNull().default(0),
    latencyMs: integer("latency_ms").notNull().default(0),
    /** Turns the window read (for cost per ingested turn). */
    turns: integer("turns").notNull().default(0),
    error: text("error"),
    /** When the window was last tried (its neurons count against that day's budget). */
    createdAt: integer("created_at").notNull(),
    /** Tries so far, the first included. */
    attempts: integer("attempts").notNull().default(1),
    /** A failed window's next try (the minute pass); NULL when done or given up. */
    retryAt: integer("retry_at"),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    index("extraction_windows_tenant_time").on(t.tenantId, t.createdAt),
    index("extraction_windows_retry").on(t.retryAt).where(sql`retry_at IS NOT NULL`),
  ],
);

/** Every decision extraction made: added, superseded, duplicate, failed (memory_history reads it). */
export const memoryEvents = sqliteTable(
  "memory_events",
  {
    tenantId: text("tenant_id").notNull(),
    id: text("id").notNull(),
    project: text("project").notNull(),
    at: integer("at").notNull(),
    /** added | superseded | duplicate | failed | dropped | deferred | retried | reextract */
    event: text("event").notNull(),
    memoryId: text("memory_id"),
    key: text("key"),
    conversationId: text("conversation_id"),
    /** A document's extraction: the document (conversation_id is then NULL). */
    documentId: text("document_id"),
    windowId: text("window_id"),
    /** JSON array of source item ids. */
    sources: text("sources").notNull().default("[]"),
    /** For a superseded memory: the memory that replaced it. */
    supersededBy: text("superseded_by"),
    error: text("error"),
    /** Why the decision was made, in words (e.g. which guard kept two memories apart). */
    reason: text("reason"),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    index("memory_events_memory").on(t.tenantId, t.memoryId),
    index("memory_events_conversation").on(t.tenantId, t.conversationId, t.at),
    index("memory_events_document").on(t.tenantId, t.documentId, t.at).where(sql`document_id IS NOT NULL`),
    index("memory_events_key").on(t.tenantId, t.project, t.key),
  ],
);

/** A project's settings: extraction on or off (NULL: the deployment's default), the default profile subject. */
export const projectSettings = sqliteTable(
  "project_settings",
  {
    tenantId: text("tenant_id").notNull(),
    project: text("project").notNull(),
    extract: integer("extract", { mode: "boolean" }),
    defaultSubject: text("default_subject"),
    /** JSON object of alias to subject ({"Mel": "Melanie"}), applied before consolidation; NULL: none. */
    subjectAliases: text("subject_aliases"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.project] })],
);

/**
 * A client's idempotency key for a write (memory_ingest, log_chat): a repeat within a day answers the first call's
 * response and writes nothing; the same key with other content is refused. Written in the write's own batch.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    tenantId: text("tenant_id").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of the tool and its arguments (the key left out). */
    requestHash: text("request_hash").notNull(),
    /** The first call's response, as JSON. */
    response: text("response").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.key] }), index("idempotency_keys_created").on(t.createdAt)],
);
