DROP INDEX `items_tenant_conversation`;--> statement-breakpoint
DROP INDEX `items_pending_embed`;--> statement-breakpoint
DROP INDEX `items_pending_link`;--> statement-breakpoint
DROP INDEX `items_tenant_task`;--> statement-breakpoint
CREATE INDEX `items_tenant_conversation` ON `items` (`tenant_id`,`conversation_id`,`position`) WHERE conversation_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `items_pending_embed` ON `items` (`created_at`) WHERE embedded_at IS NULL;--> statement-breakpoint
CREATE INDEX `items_pending_link` ON `items` (`created_at`) WHERE linked_at IS NULL;--> statement-breakpoint
CREATE INDEX `items_tenant_task` ON `items` (`tenant_id`,`project`,`task_id`) WHERE task_id IS NOT NULL;--> statement-breakpoint
DROP INDEX `tool_calls_tenant_conversation`;--> statement-breakpoint
CREATE INDEX `tool_calls_tenant_conversation` ON `tool_calls` (`tenant_id`,`conversation_id`) WHERE conversation_id IS NOT NULL;