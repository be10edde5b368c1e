import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

// The shard's own bookkeeping: which shard it is and what its background passes last saw (shard_identity,
// reconcile_state), and the tenants whose writes it refuses while they move (tenant_fences). schema.ts re-exports
// them with every other shard table.

/** Where the cron's D1 ↔ vector index reconciliation pass stopped (one row). */
export const reconcileState = sqliteTable("reconcile_state", {
  id: integer("id").primaryKey(),
  cursor: integer("cursor").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Which shard this database is (one row, written by `npm run db:migrate`) and the next chunk id it hands out.
 * Chunk ids are global across shards (clients keep them; vector ids and links carry them), so each shard
 * draws from its own range (ordinal × 2^40), and a tenant moved in keeps its ids: copied rows never move
 * this counter, as they would move SQLite's AUTOINCREMENT sequence.
 */
export const shardIdentity = sqliteTable("shard_identity", {
  id: integer("id").primaryKey(),
  name: text("name").notNull(),
  ordinal: integer("ordinal").notNull(),
  nextChunkId: integer("next_chunk_id").notNull(),
  /**
   * Tokens written to or deleted from the keyword index (chunks_fts), ever, and when it last moved: the scheduled
   * passes compare it with what they last saw to know that nothing changed without reading the index
   * (src/core/keyword-index/write-counter.ts). Kept on this row because every chunk insert writes it already.
   */
  keywordWritten: integer("keyword_written").notNull().default(0),
  keywordWrittenAt: integer("keyword_written_at"),
  /** What the passes last saw of that count (src/db/pass-marks.ts): the keyword merge's, with the index's tokens then. */
  mergeWritten: integer("merge_written"),
  mergeTokens: integer("merge_tokens"),
  /** The count when the top postings pass last left nothing due. */
  topsWritten: integer("tops_written"),
  /** The count the running vector reconciliation cycle covers, and the one the last complete cycle covered. */
  vectorsCycleWritten: integer("vectors_cycle_written"),
  vectorsWritten: integer("vectors_written"),
  /** The count the sweep's scan of conversations covered. */
  conversationsWritten: integer("conversations_written"),
  /**
   * The per-minute dispatch (src/jobs/dispatch-new-items.ts): the count when it last read the items, and the last items
   * rowid it has passed.
   */
  dispatchWritten: integer("dispatch_written"),
  dispatchCursor: integer("dispatch_cursor"),
});

/**
 * Tenants whose writes this shard refuses while they move (src/control/moves.ts): `frozen` refuses every
 * insert, update and delete of the tenant's rows (the move's final pass and switch); `purging` refuses
 * inserts and updates while the moved tenant's rows are deleted here. Triggers on every tenant table
 * (migrations/shard/0012) raise TENANT_MOVING, which callers see as a retryable error.
 */
export const tenantFences = sqliteTable("tenant_fences", {
  tenantId: text("tenant_id").primaryKey(),
  state: text("state").notNull(),
  since: integer("since").notNull(),
});
