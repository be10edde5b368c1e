DROP INDEX `items_pending_embed`;--> statement-breakpoint
DROP INDEX `items_pending_link`;--> statement-breakpoint
CREATE INDEX `items_unlinked` ON `items` (`created_at`) WHERE linked_at IS NULL;