ALTER TABLE `shard_identity` ADD `keyword_written` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `keyword_written_at` integer;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `merge_written` integer;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `merge_tokens` integer;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `tops_written` integer;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `vectors_cycle_written` integer;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `vectors_written` integer;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `conversations_written` integer;