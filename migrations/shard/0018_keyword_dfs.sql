-- Common words' chunk counts, and each top-postings list's projects (src/core/memory/keyword-tops.ts): derived from
-- chunks_fts by the minute pass, never moved.
CREATE TABLE `keyword_dfs` (
	`tenant_id` text NOT NULL,
	`term` text NOT NULL,
	`df` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `term`)
);
--> statement-breakpoint
ALTER TABLE `keyword_top_terms` ADD `projects` text;--> statement-breakpoint
-- Every large tenant is looked at again by the next pass: it keeps their words' counts, and builds anew the lists
-- that have no projects yet.
DELETE FROM `keyword_top_scans`;