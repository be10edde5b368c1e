CREATE TABLE `keyword_block_changes` (
	`id` integer PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`chunk_id` integer NOT NULL,
	`term_freqs` text
);
--> statement-breakpoint
CREATE INDEX `keyword_block_changes_tenant` ON `keyword_block_changes` (`tenant_id`,`chunk_id`);--> statement-breakpoint
CREATE TABLE `keyword_block_scans` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`through` integer NOT NULL,
	`term` text,
	`scanned_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `keyword_blocks` (
	`tenant_id` text NOT NULL,
	`term` text NOT NULL,
	`block` integer NOT NULL,
	`max_impact` real NOT NULL,
	`avgdl` real NOT NULL,
	`through` integer NOT NULL,
	`entries` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `term`, `block`)
);
--> statement-breakpoint
DROP TABLE `keyword_dfs`;--> statement-breakpoint
DROP TABLE `keyword_top_scans`;--> statement-breakpoint
DROP TABLE `keyword_top_terms`;--> statement-breakpoint
DROP TABLE `keyword_tops`;--> statement-breakpoint
-- Hand-written: the minute pass looks at every shard once more (its mark of the keyword write counter was the top
-- postings pass's), so shards at rest get their posting blocks built too (src/core/keyword-index/block-pass.ts).
UPDATE `shard_identity` SET `tops_written` = NULL;
