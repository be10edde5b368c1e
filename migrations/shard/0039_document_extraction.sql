DROP INDEX `items_tenant_document`;--> statement-breakpoint
CREATE INDEX `items_tenant_document` ON `items` (`tenant_id`,`document_id`,`position`) WHERE document_id IS NOT NULL;--> statement-breakpoint
ALTER TABLE `documents` ADD `extract` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `documents` ADD `extracted_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `documents` ADD `extraction_epoch` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `documents` ADD `extract_due_at` integer;--> statement-breakpoint
CREATE INDEX `documents_extract_due` ON `documents` (`extract_due_at`) WHERE extract_due_at IS NOT NULL;--> statement-breakpoint
ALTER TABLE `extraction_windows` ADD `document_id` text;--> statement-breakpoint
ALTER TABLE `memory_events` ADD `document_id` text;--> statement-breakpoint
CREATE INDEX `memory_events_document` ON `memory_events` (`tenant_id`,`document_id`,`at`) WHERE document_id IS NOT NULL;