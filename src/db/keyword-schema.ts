import { integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

// The keyword index's own tables (src/core/keyword-index/indexing.ts, keyword-index/tops.ts); schema.ts re-exports them, so
// drizzle-kit, the moves' table list and the tenant deletion see them with every other shard table.

/**
 * A tenant's keyword-index statistics for BM25 (src/core/keyword-index/indexing.ts): chunks indexed with its
 * private terms and their total length, and chunks still indexed the old way. Kept in the same D1
 * batch as the chunks they count.
 */
export const keywordStats = sqliteTable("keyword_stats", {
  tenantId: text("tenant_id").primaryKey(),
  chunks: integer("chunks").notNull().default(0),
  tokens: integer("tokens").notNull().default(0),
  legacyChunks: integer("legacy_chunks").notNull().default(0),
});

/**
 * Top postings (src/core/keyword-index/tops.ts): for a term in many of a tenant's chunks, the chunks where it
 * weighs most, so a search reads these instead of the term's whole posting list. Rebuilt by the minute pass.
 */
export const keywordTops = sqliteTable(
  "keyword_tops",
  {
    tenantId: text("tenant_id").notNull(),
    /** The stored term (tenant-coded, as chunks_fts holds it). */
    term: text("term").notNull(),
    chunkId: integer("chunk_id").notNull(),
    /** The term's BM25 part in the chunk when the list was built (for the order only; search scores anew). */
    impact: real("impact").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.term, t.chunkId] })],
);

/** A term whose top postings are kept: its document count and the highest chunk id when they were built. */
export const keywordTopTerms = sqliteTable(
  "keyword_top_terms",
  {
    tenantId: text("tenant_id").notNull(),
    term: text("term").notNull(),
    /** Chunks holding the term when its list was built. */
    df: integer("df").notNull(),
    /** The highest chunk id then: chunks above it are read from the index at search time. */
    through: integer("through").notNull(),
    /**
     * The list's chunks per project when it was built (JSON {project: count}): a search limited to projects reads the
     * list only where most of it is theirs. Null for a list built before it was kept: the next pass builds it anew.
     */
    projects: text("projects"),
    builtAt: integer("built_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.term] })],
);

/**
 * The minute pass's last look at a tenant's words for top postings: the tenant's keyword statistics then, and how many
 * words it left due. Reading the words costs a scan of the tenant's postings (fts5vocab counts each word's list), so a
 * tenant whose statistics have not moved since, with nothing left due, is not read again.
 */
export const keywordTopScans = sqliteTable("keyword_top_scans", {
  tenantId: text("tenant_id").primaryKey(),
  chunks: integer("chunks").notNull(),
  tokens: integer("tokens").notNull(),
  due: integer("due").notNull(),
  scannedAt: integer("scanned_at").notNull(),
});

/**
 * A tenant's common words with their chunk counts, as the minute pass's last look read them (keyword-index/tops.ts): FTS5
 * keeps no document count, and chunks_fts_row counts a word's postings at every lookup, a long count for a common
 * word, so search and feedback read a common word's count here and a rarer word's from the index.
 */
export const keywordDfs = sqliteTable(
  "keyword_dfs",
  {
    tenantId: text("tenant_id").notNull(),
    /** The stored term (tenant-coded, as chunks_fts holds it). */
    term: text("term").notNull(),
    df: integer("df").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.term] })],
);
