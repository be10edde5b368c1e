ALTER TABLE `shard_identity` ADD `dispatch_written` integer;--> statement-breakpoint
ALTER TABLE `shard_identity` ADD `dispatch_cursor` integer;