CREATE TABLE `cache_counters` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`hits` integer DEFAULT 0 NOT NULL,
	`misses` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `cache_entries` (
	`tenant_id` text NOT NULL,
	`key` text NOT NULL,
	`project` text NOT NULL,
	`generation` integer NOT NULL,
	`params_hash` text NOT NULL,
	`query` text NOT NULL,
	`vector` blob NOT NULL,
	`bytes` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `cache_entries_lookup` ON `cache_entries` (`tenant_id`,`project`,`generation`,`params_hash`);--> statement-breakpoint
CREATE INDEX `cache_entries_age` ON `cache_entries` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `cache_generations` (
	`tenant_id` text NOT NULL,
	`project` text NOT NULL,
	`generation` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `project`)
);
--> statement-breakpoint
CREATE TABLE `links` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`source_type` text NOT NULL,
	`source_id` text NOT NULL,
	`target_type` text NOT NULL,
	`target_id` text NOT NULL,
	`relationship_type` text NOT NULL,
	`weight` real NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `links_edge` ON `links` (`tenant_id`,`source_type`,`source_id`,`target_type`,`target_id`,`relationship_type`);--> statement-breakpoint
CREATE INDEX `links_target` ON `links` (`tenant_id`,`target_type`,`target_id`);