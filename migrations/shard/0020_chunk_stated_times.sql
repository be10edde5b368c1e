ALTER TABLE `chunks` ADD `stated_times` text;--> statement-breakpoint
CREATE INDEX `chunks_missing_stated_times` ON `chunks` (`tenant_id`,`id`) WHERE stated_times IS NULL;
-- Chunks written before this have none: the re-index sweep fills them through this index (resolving needs the time
-- grammar, so not here in SQL), and search resolves a row still without them as it reads it, to the same result.
