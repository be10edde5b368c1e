DROP INDEX `items_tenant_hash`;--> statement-breakpoint
ALTER TABLE `items` ADD `key` text;--> statement-breakpoint
ALTER TABLE `items` ADD `superseded_by` text;--> statement-breakpoint
CREATE INDEX `items_tenant_key` ON `items` (`tenant_id`,`project`,`key`) WHERE key IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `items_tenant_hash` ON `items` (`tenant_id`,`project`,`content_hash`,coalesce(`key`, '')) WHERE conversation_id IS NULL AND tier <> 'superseded';
