CREATE TABLE `extraction_windows` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`project` text NOT NULL,
	`conversation_id` text NOT NULL,
	`first_position` integer NOT NULL,
	`last_position` integer NOT NULL,
	`status` text NOT NULL,
	`calls` integer DEFAULT 0 NOT NULL,
	`model` text NOT NULL,
	`tokens_in` integer DEFAULT 0 NOT NULL,
	`tokens_out` integer DEFAULT 0 NOT NULL,
	`neurons` integer DEFAULT 0 NOT NULL,
	`latency_ms` integer DEFAULT 0 NOT NULL,
	`turns` integer DEFAULT 0 NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `extraction_windows_tenant_time` ON `extraction_windows` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `memory_events` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`project` text NOT NULL,
	`at` integer NOT NULL,
	`event` text NOT NULL,
	`memory_id` text,
	`key` text,
	`conversation_id` text,
	`window_id` text,
	`sources` text DEFAULT '[]' NOT NULL,
	`superseded_by` text,
	`error` text,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `memory_events_memory` ON `memory_events` (`tenant_id`,`memory_id`);--> statement-breakpoint
CREATE INDEX `memory_events_conversation` ON `memory_events` (`tenant_id`,`conversation_id`,`at`);--> statement-breakpoint
CREATE INDEX `memory_events_key` ON `memory_events` (`tenant_id`,`project`,`key`);--> statement-breakpoint
CREATE TABLE `memory_sources` (
	`tenant_id` text NOT NULL,
	`source_id` text NOT NULL,
	`memory_id` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `source_id`, `memory_id`)
);
--> statement-breakpoint
CREATE TABLE `project_settings` (
	`tenant_id` text NOT NULL,
	`project` text NOT NULL,
	`extract` integer,
	`default_subject` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `project`)
);
--> statement-breakpoint
ALTER TABLE `conversations` ADD `extracted_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `conversations` ADD `extracted_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `items` ADD `memory_kind` text;--> statement-breakpoint
ALTER TABLE `items` ADD `subject` text;--> statement-breakpoint
ALTER TABLE `items` ADD `valid_from` integer;--> statement-breakpoint
ALTER TABLE `items` ADD `valid_to` integer;--> statement-breakpoint
ALTER TABLE `items` ADD `sources` text;--> statement-breakpoint
CREATE INDEX `items_tenant_subject` ON `items` (`tenant_id`,`project`,`subject`) WHERE memory_kind IS NOT NULL;--> statement-breakpoint
-- Hand-written below: the write fence of a moving tenant (0012) on the new tenant tables.
--> statement-breakpoint
CREATE TRIGGER `fence_memory_sources_insert` AFTER INSERT ON `memory_sources` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_memory_sources_update` AFTER UPDATE ON `memory_sources` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_memory_sources_delete` AFTER DELETE ON `memory_sources` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_extraction_windows_insert` AFTER INSERT ON `extraction_windows` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_extraction_windows_update` AFTER UPDATE ON `extraction_windows` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_extraction_windows_delete` AFTER DELETE ON `extraction_windows` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_memory_events_insert` AFTER INSERT ON `memory_events` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_memory_events_update` AFTER UPDATE ON `memory_events` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_memory_events_delete` AFTER DELETE ON `memory_events` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_settings_insert` AFTER INSERT ON `project_settings` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_settings_update` AFTER UPDATE ON `project_settings` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_project_settings_delete` AFTER DELETE ON `project_settings` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
