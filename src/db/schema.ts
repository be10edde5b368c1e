import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

// A data shard's tables (every shard holds the same schema; migrations/shard). Tenants, keys, the shard map,
// moves and job failures live in the control database (control-schema.ts, migrations/control).
// All timestamps are epoch milliseconds. Every tenant-owned table carries tenant_id first in its
// indexes, because every query filters on it (see src/db/scope.ts). The keyword index's tables are in keyword-schema.ts,
// the semantic cache's in cache-schema.ts, extraction's in extraction-schema.ts, the usage log's in usage-schema.ts and
// the shard's own bookkeeping in shard-state-schema.ts.

export * from "./cache-schema";
export * from "./extraction-schema";
export * from "./keyword-schema";
export * from "./shard-state-schema";
export * from "./usage-schema";

/**
 * A project being deleted (src/core/ownership/delete-project.ts). `updated_at`: requested, or last
 * progressed by a deletion job; the cron sweep resumes a deletion that stalled.
 */
export const projectDeletions = sqliteTable(
  "project_deletions",
  {
    tenantId: text("tenant_id").notNull(),
    project: text("project").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.project] })],
);

/**
 * One table for every stored text: memories, documents/resources, conversation messages, segments.
 * `kind` says which tool family wrote it; `type` is the seed's content type (note, code, message, log...).
 */
export const items = sqliteTable(
  "items",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    project: text("project").notNull().default("default"),
    kind: text("kind").notNull(),
    type: text("type").notNull(),
    conversationId: text("conversation_id"),
    /** Order of a message within its conversation, or of a chunk within its document. */
    position: integer("position"),
    role: text("role"),
    content: text("content").notNull(),
    tags: text("tags").notNull().default("[]"),
    /** 0..1; seed 003's LOW/MEDIUM/HIGH/CRITICAL map onto it. */
    importance: real("importance").notNull().default(0.5),
    metadata: text("metadata").notNull().default("{}"),
    tier: text("tier").notNull().default("active"),
    pinned: integer("pinned", { mode: "boolean" }).notNull().default(false),
    taskId: text("task_id"),
    filePath: text("file_path"),
    lineStart: integer("line_start"),
    lineEnd: integer("line_end"),
    tokens: integer("tokens").notNull(),
    contentHash: text("content_hash").notNull(),
    generation: text("generation").notNull().default("young"),
    gcSurvivalCount: integer("gc_survival_count").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    touchedAt: integer("touched_at").notNull(),
    /** When the item's chunks were last embedded; NULL while an embed job is pending. */
    embeddedAt: integer("embedded_at"),
    /** When auto-link last linked the item to its neighbours; NULL while that job is pending. */
    linkedAt: integer("linked_at"),
    /** A keyed fact's key (e.g. user.city): storing the key again in the project supersedes this item. */
    key: text("key"),
    /** The item that superseded this one (its tier is then 'superseded'). */
    supersededBy: text("superseded_by"),
    /**
     * A memory derived from conversation turns by extraction (src/core/extraction/): fact, preference, event,
     * instruction or task; NULL for everything stored as given.
     */
    memoryKind: text("memory_kind"),
    /** Whom a derived memory is about (the user, or a person of the conversations). */
    subject: text("subject"),
    /** When a derived memory became true (an event's date, else its first source turn's time), epoch ms. */
    validFrom: integer("valid_from"),
    /** When it stopped being true (a later memory of its key superseded it); NULL while it holds. */
    validTo: integer("valid_to"),
    /** A derived memory's source turns: JSON array of item ids (memory_sources indexes them the other way). */
    sources: text("sources"),
    /** A derived memory's subject as compared: NFKC, case-folded, any script (extraction/names.ts). */
    subjectKey: text("subject_key"),
    /** Who said what a derived fact rests on when no user or system turn did: assistant, tool or document; else NULL. */
    saidBy: text("said_by"),
    /** How much of a derived memory's `when` was given: day, month or year (valid_from is its start); NULL: none. */
    whenPrecision: text("when_precision"),
    /** A chunk of a document (memory_ingest_document): the document, the page its text starts on, its section path. */
    documentId: text("document_id"),
    documentPage: integer("document_page"),
    documentSection: text("document_section"),
  },
  (t) => [
    index("items_tenant_project").on(t.tenantId, t.project, t.tier),
    // Export and a move page a tenant's items by id: without it each page walks and sorts the tenant's whole index.
    // Unique (as id is), so the planner knows a lookup by it finds one row and keeps a join's order after it.
    uniqueIndex("items_tenant_id").on(t.tenantId, t.id),
    // Partial where a row is often outside them: a row not in an index costs no write there (D1 bills each index
    // entry a write adds), and an update that takes a row out of one (embedded, linked) writes only the row.
    index("items_tenant_conversation")
      .on(t.tenantId, t.conversationId, t.position)
      .where(sql`conversation_id IS NOT NULL`),
    // One index for both waits, since an item is embedded before it is linked: a new item enters one index, not two, and
    // its embedding (a column the index does not name) leaves it untouched. A query for the unembedded names
    // `linked_at IS NULL` too, so SQLite knows the index holds them. Where auto-linking is off, embedding marks an item
    // linked as well (embedding.ts).
    index("items_unlinked").on(t.createdAt).where(sql`linked_at IS NULL`),
    index("items_tenant_task").on(t.tenantId, t.project, t.taskId).where(sql`task_id IS NOT NULL`),
    // Dedupe: identical content in one project is one item (messages excepted: "ok" twice is two turns),
    // among current items of one key (or of none): a fact may return to a value it had before.
    uniqueIndex("items_tenant_hash")
      .on(t.tenantId, t.project, t.contentHash, sql`coalesce(${t.key}, '')`)
      .where(sql`conversation_id IS NULL AND tier <> 'superseded'`),
    index("items_tenant_key").on(t.tenantId, t.project, t.key).where(sql`key IS NOT NULL`),
    // Profiles read a subject's derived memories; only derived rows are in it.
    index("items_tenant_subject").on(t.tenantId, t.project, t.subjectKey).where(sql`memory_kind IS NOT NULL`),
    // A document's chunks, to replace or delete them with it; only chunk rows are in it.
    // In reading order (a chunk's position is its place in the document), for extraction to read them in windows.
    index("items_tenant_document").on(t.tenantId, t.documentId, t.position).where(sql`document_id IS NOT NULL`),
  ],
);

/**
 * A document ingested whole (memory_ingest_document, docs/documents.md): its metadata, what it was cut into and its
 * state. Its chunks are items (items.document_id); its original and its Markdown are R2 objects under
 * `<tenant>/<id>/<sha256>`. `document_key` is the client's stable id: ingesting it again replaces the document.
 */
export const documents = sqliteTable(
  "documents",
  {
    tenantId: text("tenant_id").notNull(),
    id: text("id").notNull(),
    project: text("project").notNull(),
    documentKey: text("document_key"),
    title: text("title").notNull(),
    fileName: text("file_name"),
    url: text("url"),
    mimeType: text("mime_type").notNull(),
    bytes: integer("bytes").notNull(),
    sha256: text("sha256").notNull(),
    pages: integer("pages"),
    /** ready | converting | failed */
    status: text("status").notNull(),
    error: text("error"),
    /** The sections as JSON: [{section, page, tokens, chunks}], in reading order. */
    sections: text("sections").notNull().default("[]"),
    chunks: integer("chunks").notNull().default(0),
    tokens: integer("tokens").notNull().default(0),
    tags: text("tags").notNull().default("[]"),
    metadata: text("metadata").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** Memories are extracted from its chunks (memory_ingest_document's `extract`): 1, else 0. */
    extract: integer("extract").notNull().default(0),
    /** Extraction's cursor over its chunks in order (items.position), as conversations.extracted_count. */
    extractedCount: integer("extracted_count").notNull().default(0),
    /** memory_reextract starts a new one, whose windows are new windows (as conversations.extraction_epoch). */
    extractionEpoch: integer("extraction_epoch").notNull().default(0),
    /** When a job should have read it; NULL when nothing is left to extract (the minute pass re-sends a lost job). */
    extractDueAt: integer("extract_due_at"),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    uniqueIndex("documents_tenant_key").on(t.tenantId, t.project, t.documentKey).where(sql`document_key IS NOT NULL`),
    index("documents_tenant_project").on(t.tenantId, t.project, t.createdAt),
    // The sweep's lost conversions: only converting rows are in it, so a sweep with none reads one entry.
    index("documents_converting").on(t.updatedAt).where(sql`status = 'converting'`),
    // The minute pass's lost extractions: only documents with extraction pending are in it.
    index("documents_extract_due").on(t.extractDueAt).where(sql`extract_due_at IS NOT NULL`),
  ],
);

/** A conversation (seed 003 context, seed 000/002 session): ordered messages in `items`. */
export const conversations = sqliteTable(
  "conversations",
  {
    tenantId: text("tenant_id").notNull(),
    id: text("id").notNull(),
    project: text("project").notNull().default("default"),
    messageCount: integer("message_count").notNull().default(0),
    tokens: integer("tokens").notNull().default(0),
    /** message_count when the latest summary was written (auto-summarize compares against it). */
    summarizedCount: integer("summarized_count").notNull().default(0),
    /** tokens when the latest summary was written. */
    summarizedTokens: integer("summarized_tokens").notNull().default(0),
    /** Messages (positions 0 to this - 1) whose windows extraction has read. */
    extractedCount: integer("extracted_count").notNull().default(0),
    /** tokens when extraction last read up to extracted_count (the write path compares against it). */
    extractedTokens: integer("extracted_tokens").notNull().default(0),
    /** The position the next message takes: it only grows, so deleting the last turns frees no position for reuse. */
    nextPosition: integer("next_position").notNull().default(0),
    /** While turns wait for extraction: when a job should have read them; the minute pass re-sends one past it. */
    extractDueAt: integer("extract_due_at"),
    /** Bumped by memory_reextract: windows of a new epoch are new windows, read again with the current model. */
    extractionEpoch: integer("extraction_epoch").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    index("conversations_tenant_updated").on(t.tenantId, t.updatedAt),
    index("conversations_extract_due").on(t.extractDueAt).where(sql`extract_due_at IS NOT NULL`),
  ],
);

/** Versioned conversation summaries (seed 003 summarize_context); a new version each time. */
export const summaries = sqliteTable(
  "summaries",
  {
    tenantId: text("tenant_id").notNull(),
    conversationId: text("conversation_id").notNull(),
    version: integer("version").notNull(),
    summary: text("summary").notNull(),
    codeBlocks: text("code_blocks").notNull().default("[]"),
    keyInsights: text("key_insights").notNull().default("[]"),
    importanceScore: real("importance_score").notNull(),
    messageCount: integer("message_count").notNull(),
    tokensUsed: integer("tokens_used").notNull(),
    tokenLimit: integer("token_limit").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.conversationId, t.version] })],
);

/** The current task per project (seed 004 context_set_current_task). */
export const projectTasks = sqliteTable(
  "project_tasks",
  {
    tenantId: text("tenant_id").notNull(),
    project: text("project").notNull(),
    currentTaskId: text("current_task_id"),
    previousTaskId: text("previous_task_id"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.project] })],
);

/** Slices of items for search. Integer ids: seeds 000 and 002 pass numeric chunk ids. */
export const chunks = sqliteTable(
  "chunks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    tenantId: text("tenant_id").notNull(),
    itemId: text("item_id").notNull(),
    chunkIndex: integer("chunk_index").notNull(),
    content: text("content").notNull(),
    /**
     * What the chunk's own text leaves implicit: for a message, the speaker and the start of the turn
     * it answers; for a document, its path and tags. Indexed (at lower BM25 weight) and embedded with it.
     */
    context: text("context").notNull().default(""),
    tokens: integer("tokens").notNull(),
    /**
     * Tokens of the chunk's row in chunks_fts (both columns), the document length of BM25. NULL for
     * rows indexed before tenant-private terms, until the re-index sweep rewrites them.
     */
    ftsTokens: integer("fts_tokens"),
    /**
     * The item's project, copied at write time (an item never changes project): keyword search leaves out
     * another project's postings where it already reads the chunk row for its length, instead of ranking
     * the whole tenant and walking past them. NULL for a row written by a Worker older than migration 0014
     * (its search filter lets NULL through and checks the item).
     */
    project: text("project"),
    /**
     * The chunk's forward index (src/core/keyword-index/term-freqs.ts): its terms with their BM25 frequencies, so search
     * scores a common word on the chunks it considers instead of reading the word's whole posting list. NULL for a
     * row written before migration 0016, until the re-index sweep fills it.
     */
    termFreqs: text("term_freqs"),
    /**
     * The times the chunk's text states, resolved against its item's created_at when written
     * (src/core/search/stated-times.ts): JSON [[from, to], ...] in epoch ms. NULL for a row written before
     * migration 0020, until the re-index sweep fills it; search resolves those as it reads them meanwhile.
     */
    statedTimes: text("stated_times"),
    /**
     * The keyword tokenization its chunks_fts row and forward index were written with (KEYWORD_VERSION in
     * src/shared/base-forms.ts). NULL for a row written before migration 0021 (irregular forms such as
     * "bought" indexed as written), until the re-index sweep rewrites it with the current one.
     */
    keywordVersion: integer("keyword_version"),
  },
  (t) => [
    index("chunks_tenant_item").on(t.tenantId, t.itemId, t.chunkIndex),
    index("chunks_legacy_fts").on(t.tenantId, t.id).where(sql`fts_tokens IS NULL`),
    index("chunks_missing_term_freqs").on(t.tenantId, t.id).where(sql`term_freqs IS NULL`),
    index("chunks_missing_stated_times").on(t.tenantId, t.id).where(sql`stated_times IS NULL`),
    index("chunks_keyword_outdated").on(t.tenantId, t.id).where(sql`keyword_version IS NULL`),
  ],
);

/** The local vector index (offline runs): one row per chunk, exact cosine at query time. */
export const localVectors = sqliteTable(
  "local_vectors",
  {
    tenantId: text("tenant_id").notNull(),
    chunkId: integer("chunk_id").notNull(),
    itemId: text("item_id").notNull(),
    project: text("project").notNull(),
    kind: text("kind").notNull(),
    type: text("type").notNull(),
    vector: blob("vector", { mode: "buffer" }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.chunkId] }),
    index("local_vectors_scope").on(t.tenantId, t.project),
    // Reconciliation walks every tenant's vectors in chunk id order.
    index("local_vectors_chunk").on(t.chunkId),
  ],
);

/**
 * Ids the Vectorize adapter has written (its binding cannot list ids): a row is added before each upsert
 * and removed after each delete, so every vector Vectorize may hold has a row here. Reconciliation walks
 * it to find vectors whose chunk is gone; tenant deletion walks it to delete every vector of the tenant.
 */
export const vectorIds = sqliteTable(
  "vector_ids",
  {
    tenantId: text("tenant_id").notNull(),
    chunkId: integer("chunk_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.chunkId] }), index("vector_ids_chunk").on(t.chunkId)],
);

/**
 * Typed, weighted, directed edges between any two records (items, conversations, chunks):
 * relationships, context links, memory links. `id` is a stable string (`rel_...`).
 */
export const links = sqliteTable(
  "links",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    sourceType: text("source_type").notNull(),
    sourceId: text("source_id").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id").notNull(),
    relationshipType: text("relationship_type").notNull(),
    weight: real("weight").notNull(),
    metadata: text("metadata").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("links_edge").on(t.tenantId, t.sourceType, t.sourceId, t.targetType, t.targetId, t.relationshipType),
    // With the relationship: search passes over the links of a type it does not count (similar-content links when the
    // embedder's weight is 0) inside the index, instead of reading each link's row (links_edge has it already).
    index("links_target").on(t.tenantId, t.targetType, t.targetId, t.relationshipType),
  ],
);
