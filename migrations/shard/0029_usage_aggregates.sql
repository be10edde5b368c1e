ALTER TABLE `usage_hours` ADD `d1_ms` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `queue_operations` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `latency_hist` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `worker_hist` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
-- Rows logged before operations were counted: three a message, as the report counted them then (a tenant frozen for a
-- move refuses updates, and keeps 0 for its old rows). Hours logged before latencies were bucketed keep '{}': the
-- report gives no p50 or p95 for them.
UPDATE `usage_hours` SET `queue_operations` = `queue_sends` * 3 WHERE `tenant_id` NOT IN (SELECT `tenant_id` FROM `tenant_fences`);
