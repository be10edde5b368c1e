CREATE TABLE `project_deletions` (
	`tenant_id` text NOT NULL,
	`project` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `project`)
);
--> statement-breakpoint
CREATE TABLE `reconcile_state` (
	`id` integer PRIMARY KEY NOT NULL,
	`cursor` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `vector_ids` (
	`tenant_id` text NOT NULL,
	`chunk_id` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `chunk_id`)
);
--> statement-breakpoint
CREATE INDEX `vector_ids_chunk` ON `vector_ids` (`chunk_id`);--> statement-breakpoint
ALTER TABLE `tenants` ADD `deleting_at` integer;--> statement-breakpoint
CREATE INDEX `local_vectors_chunk` ON `local_vectors` (`chunk_id`);--> statement-breakpoint
-- Hand-written below. Vectors written before this migration have no vector_ids row: record the chunks of
-- embedded items (their vectors exist, or reconciliation finds them missing and re-queues them). Vectors
-- orphaned before this migration cannot be listed from Vectorize and are not found.
INSERT OR IGNORE INTO `vector_ids` (`tenant_id`, `chunk_id`) SELECT c.`tenant_id`, c.`id` FROM `chunks` c JOIN `items` i ON i.`id` = c.`item_id` WHERE i.`embedded_at` IS NOT NULL;
