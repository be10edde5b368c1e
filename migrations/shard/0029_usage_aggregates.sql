CREATE TABLE `tool_conversation_days` (
	`tenant_id` text NOT NULL,
	`tool` text NOT NULL,
	`conversation_id` text NOT NULL,
	`project` text NOT NULL,
	`day` integer NOT NULL,
	`calls` integer NOT NULL,
	`last_used` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `tool`, `conversation_id`, `project`, `day`)
);
--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `d1_ms` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `queue_operations` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `latency_hist` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `worker_hist` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
-- Hand-written below. Rows logged before operations were counted: three a message, as the report counted them then (a
-- tenant frozen for a move refuses updates, and keeps 0 for its old rows). Hours logged before latencies were bucketed
-- keep '{}': the report gives no p50 or p95 for them.
UPDATE `usage_hours` SET `queue_operations` = `queue_sends` * 3 WHERE `tenant_id` NOT IN (SELECT `tenant_id` FROM `tenant_fences`);
--> statement-breakpoint
-- Until now tool_calls held every call: the conversations' counts start from it, before the fence exists.
INSERT INTO `tool_conversation_days` (`tenant_id`, `tool`, `conversation_id`, `project`, `day`, `calls`, `last_used`)
SELECT `tenant_id`, `tool`, `conversation_id`, COALESCE(`project`, ''), `started_at` - `started_at` % 86400000, COUNT(*), MAX(`started_at`)
FROM `tool_calls` WHERE `conversation_id` IS NOT NULL GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
-- The write fence of a moving tenant (0012) on the new table.
CREATE TRIGGER `fence_tool_conversation_days_insert` AFTER INSERT ON `tool_conversation_days` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_tool_conversation_days_update` AFTER UPDATE ON `tool_conversation_days` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_tool_conversation_days_delete` AFTER DELETE ON `tool_conversation_days` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
