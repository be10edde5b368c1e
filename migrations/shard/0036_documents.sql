CREATE TABLE `documents` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`project` text NOT NULL,
	`document_key` text,
	`title` text NOT NULL,
	`file_name` text,
	`url` text,
	`mime_type` text NOT NULL,
	`bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`pages` integer,
	`status` text NOT NULL,
	`error` text,
	`sections` text DEFAULT '[]' NOT NULL,
	`chunks` integer DEFAULT 0 NOT NULL,
	`tokens` integer DEFAULT 0 NOT NULL,
	`tags` text DEFAULT '[]' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `documents_tenant_key` ON `documents` (`tenant_id`,`project`,`document_key`) WHERE document_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX `documents_tenant_project` ON `documents` (`tenant_id`,`project`,`created_at`);--> statement-breakpoint
ALTER TABLE `items` ADD `document_id` text;--> statement-breakpoint
ALTER TABLE `items` ADD `document_page` integer;--> statement-breakpoint
ALTER TABLE `items` ADD `document_section` text;--> statement-breakpoint
CREATE INDEX `items_tenant_document` ON `items` (`tenant_id`,`document_id`) WHERE document_id IS NOT NULL;--> statement-breakpoint
-- Hand-written below: the write fence of a moving tenant (0012) on the new tenant table.
CREATE TRIGGER `fence_documents_insert` AFTER INSERT ON `documents` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_documents_update` AFTER UPDATE ON `documents` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_documents_delete` AFTER DELETE ON `documents` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
