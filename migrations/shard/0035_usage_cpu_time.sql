ALTER TABLE `usage_hours` ADD `cpu_ms` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `cpu_calls` real DEFAULT 0 NOT NULL;