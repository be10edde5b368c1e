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
CREATE INDEX `items_tenant_document` ON `items` (`tenant_id`,`document_id`) WHERE document_id IS NOT NULL;