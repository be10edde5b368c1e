-- Keyword top postings (src/core/memory/keyword-tops.ts): derived from chunks_fts by the minute pass, never moved.
CREATE TABLE `keyword_top_scans` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`chunks` integer NOT NULL,
	`tokens` integer NOT NULL,
	`due` integer NOT NULL,
	`scanned_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `keyword_top_terms` (
	`tenant_id` text NOT NULL,
	`term` text NOT NULL,
	`df` integer NOT NULL,
	`through` integer NOT NULL,
	`built_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `term`)
);
--> statement-breakpoint
CREATE TABLE `keyword_tops` (
	`tenant_id` text NOT NULL,
	`term` text NOT NULL,
	`chunk_id` integer NOT NULL,
	`impact` real NOT NULL,
	PRIMARY KEY(`tenant_id`, `term`, `chunk_id`)
);
