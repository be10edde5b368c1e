ALTER TABLE `usage_hours` ADD `queue_operations` real DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Rows logged before operations were counted: three a message, as the report counted them then (a tenant frozen for a
-- move refuses updates, and keeps 0 for its old rows).
UPDATE `usage_hours` SET `queue_operations` = `queue_sends` * 3 WHERE `tenant_id` NOT IN (SELECT `tenant_id` FROM `tenant_fences`);
