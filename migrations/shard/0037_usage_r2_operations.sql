ALTER TABLE `usage_hours` ADD `r2_class_a` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hours` ADD `r2_class_b` real DEFAULT 0 NOT NULL;