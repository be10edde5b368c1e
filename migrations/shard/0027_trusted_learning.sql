CREATE TABLE `idempotency_keys` (
	`tenant_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`response` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
DROP INDEX `items_tenant_subject`;--> statement-breakpoint
ALTER TABLE `items` ADD `subject_key` text;--> statement-breakpoint
ALTER TABLE `items` ADD `said_by` text;--> statement-breakpoint
ALTER TABLE `items` ADD `when_precision` text;--> statement-breakpoint
CREATE INDEX `items_tenant_subject` ON `items` (`tenant_id`,`project`,`subject_key`) WHERE memory_kind IS NOT NULL;--> statement-breakpoint
ALTER TABLE `conversations` ADD `next_position` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `conversations` ADD `extract_due_at` integer;--> statement-breakpoint
ALTER TABLE `conversations` ADD `extraction_epoch` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `conversations_extract_due` ON `conversations` (`extract_due_at`) WHERE extract_due_at IS NOT NULL;--> statement-breakpoint
ALTER TABLE `extraction_windows` ADD `attempts` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `extraction_windows` ADD `retry_at` integer;--> statement-breakpoint
CREATE INDEX `extraction_windows_retry` ON `extraction_windows` (`retry_at`) WHERE retry_at IS NOT NULL;--> statement-breakpoint
ALTER TABLE `memory_events` ADD `reason` text;--> statement-breakpoint
ALTER TABLE `project_settings` ADD `subject_aliases` text;--> statement-breakpoint
-- Hand-written below: backfills, and the write fence of a moving tenant (0012) on the new tenant table.
-- A subject stored before 0027 is compared by its lowercased spelling (SQLite folds ASCII only); new ones by NFKC and case folding.
UPDATE `items` SET `subject_key` = lower(trim(`subject`)) WHERE `memory_kind` IS NOT NULL;
--> statement-breakpoint
UPDATE `conversations` SET `next_position` = (SELECT COALESCE(MAX(i.`position`), -1) + 1 FROM `items` i WHERE i.`tenant_id` = `conversations`.`tenant_id` AND i.`conversation_id` = `conversations`.`id`);
--> statement-breakpoint
CREATE TRIGGER `fence_idempotency_keys_insert` AFTER INSERT ON `idempotency_keys` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_idempotency_keys_update` AFTER UPDATE ON `idempotency_keys` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_idempotency_keys_delete` AFTER DELETE ON `idempotency_keys` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
