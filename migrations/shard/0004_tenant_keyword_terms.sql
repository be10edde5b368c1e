CREATE TABLE `keyword_stats` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`chunks` integer DEFAULT 0 NOT NULL,
	`tokens` integer DEFAULT 0 NOT NULL,
	`legacy_chunks` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE `chunks` ADD `fts_tokens` integer;--> statement-breakpoint
CREATE INDEX `chunks_legacy_fts` ON `chunks` (`tenant_id`,`id`) WHERE fts_tokens IS NULL;--> statement-breakpoint
-- Hand-written below. Tenant-private keyword terms (src/core/fts-text.ts, src/core/keyword-index.ts):
-- chunks indexed before this migration keep their rows in chunks_fts with plain terms until the cron
-- sweep re-indexes them (fts_tokens IS NULL marks them, chunks_legacy_fts finds them); until then
-- each tenant counts them here (for BM25's N).
INSERT INTO `keyword_stats` (`tenant_id`, `legacy_chunks`) SELECT `tenant_id`, COUNT(*) FROM `chunks` GROUP BY `tenant_id`;
--> statement-breakpoint
-- One row per token occurrence (term, doc = chunk id, col, offset), read by term: BM25 from the
-- caller's own postings (document frequencies, term frequencies) instead of FTS5's table-wide bm25().
CREATE VIRTUAL TABLE `chunks_fts_instance` USING fts5vocab(chunks_fts, instance);
--> statement-breakpoint
-- Liveness of the re-index job chain (one row): the sweep starts a chain only when none has run lately.
CREATE TABLE `keyword_reindex` (`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1), `heartbeat_at` integer NOT NULL);
