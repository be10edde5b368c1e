import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

// The keyword index's own tables (src/core/keyword-index/indexing.ts, keyword-index/blocks.ts); schema.ts re-exports them, so
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
 * Posting blocks (src/core/keyword-index/blocks.ts): a word's postings in the tenant, as rows of about BLOCK_SIZE
 * entries, so a search reads a word's list in a few rows instead of a row per posting. Blocks 0, 1, ... hold the
 * postings as of the word's last full build, best first by impact (block 0 the best); block -1, when there is one,
 * the postings written since, up to `through`. Built and renewed by the minute pass.
 */
export const keywordBlocks = sqliteTable(
  "keyword_blocks",
  {
    tenantId: text("tenant_id").notNull(),
    /** The stored term (tenant-coded, as chunks_fts holds it). */
    term: text("term").notNull(),
    block: integer("block").notNull(),
    /** The highest impact among the block's entries (BM25's term frequency part at `avgdl`): a bound on the rest. */
    maxImpact: real("max_impact").notNull(),
    /** The average length the impacts were computed with (the tenant's at the build). */
    avgdl: real("avgdl").notNull(),
    /** The highest chunk id the word's blocks covered when this one was written: later chunks are read at search time. */
    through: integer("through").notNull(),
    /** JSON [[chunk id, frequency, length, project], ...] (frequency: content counts 1, context 0.5). */
    entries: text("entries").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.term, t.block] })],
);

/**
 * Chunks whose keyword rows changed in place or went (a new context, a re-index, a deletion), with their forward index
 * before (chunks.term_freqs): the words whose blocks may hold them are built anew by the next pass, and until then a
 * search scores them from their rows. Written in the batch that changes them.
 */
export const keywordBlockChanges = sqliteTable(
  "keyword_block_changes",
  {
    id: integer("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    chunkId: integer("chunk_id").notNull(),
    /** The chunk's forward index before the change (null where it had none). */
    termFreqs: text("term_freqs"),
  },
  (t) => [index("keyword_block_changes_tenant").on(t.tenantId, t.chunkId)],
);

/**
 * The posting blocks pass's progress on the shard: the highest chunk id whose words it has looked at (`tenant_id`
 * ''), and, per tenant, its first build: the last word built (null once every word was, or for a tenant that had no
 * chunks when it was first seen).
 */
export const keywordBlockScans = sqliteTable("keyword_block_scans", {
  tenantId: text("tenant_id").primaryKey(),
  through: integer("through").notNull(),
  /** The first build's last word, in term order; null when done. */
  term: text("term"),
  scannedAt: integer("scanned_at").notNull(),
});
