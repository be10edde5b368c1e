CREATE TABLE `cache_link_clock` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `cache_link_marks` (
	`tenant_id` text NOT NULL,
	`item_id` text NOT NULL,
	`project` text NOT NULL,
	`seq` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `item_id`)
);
--> statement-breakpoint
CREATE INDEX `cache_link_marks_project` ON `cache_link_marks` (`tenant_id`,`project`);--> statement-breakpoint
ALTER TABLE `cache_entries` ADD `link_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `cache_entries` ADD `link_items` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
-- Hand-added. Entries built before link marks existed recorded no items, so no link change would reach
-- them: they leave the index (their KV values expire with their TTL; a lookup never reads KV without an index row).
DELETE FROM `cache_entries`;
