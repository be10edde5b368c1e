CREATE TABLE `usage_hours` (
	`tenant_id` text NOT NULL,
	`hour` integer NOT NULL,
	`source` text NOT NULL,
	`name` text NOT NULL,
	`project` text NOT NULL,
	`calls` integer NOT NULL,
	`errors` integer NOT NULL,
	`d1_round_trips` real NOT NULL,
	`d1_rows_read` real NOT NULL,
	`d1_rows_written` real NOT NULL,
	`local_rows_read` real NOT NULL,
	`local_rows_written` real NOT NULL,
	`kv_reads` real NOT NULL,
	`kv_writes` real NOT NULL,
	`kv_deletes` real NOT NULL,
	`kv_lists` real NOT NULL,
	`queue_sends` real NOT NULL,
	`ai_neurons` real NOT NULL,
	`read_hist` text NOT NULL,
	`written_hist` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `hour`, `source`, `name`, `project`)
);--> statement-breakpoint

-- Hand-written below: the write fence of a moving tenant (0012) on the new table.
--> statement-breakpoint
CREATE TRIGGER `fence_usage_hours_insert` AFTER INSERT ON `usage_hours` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_usage_hours_update` AFTER UPDATE ON `usage_hours` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = NEW.tenant_id) BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
--> statement-breakpoint
CREATE TRIGGER `fence_usage_hours_delete` AFTER DELETE ON `usage_hours` WHEN EXISTS (SELECT 1 FROM tenant_fences WHERE tenant_id = OLD.tenant_id AND state = 'frozen') BEGIN SELECT RAISE(ABORT, 'TENANT_MOVING'); END;
