CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`key_hash` text NOT NULL,
	`key_prefix` text NOT NULL,
	`scopes` text NOT NULL,
	`projects` text,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_tenant` ON `api_keys` (`tenant_id`);--> statement-breakpoint
CREATE TABLE `chunks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`item_id` text NOT NULL,
	`chunk_index` integer NOT NULL,
	`content` text NOT NULL,
	`context` text DEFAULT '' NOT NULL,
	`tokens` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `chunks_tenant_item` ON `chunks` (`tenant_id`,`item_id`,`chunk_index`);--> statement-breakpoint
CREATE TABLE `conversations` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`project` text DEFAULT 'default' NOT NULL,
	`message_count` integer DEFAULT 0 NOT NULL,
	`tokens` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `conversations_tenant_updated` ON `conversations` (`tenant_id`,`updated_at`);--> statement-breakpoint
CREATE TABLE `items` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`project` text DEFAULT 'default' NOT NULL,
	`kind` text NOT NULL,
	`type` text NOT NULL,
	`conversation_id` text,
	`position` integer,
	`role` text,
	`content` text NOT NULL,
	`tags` text DEFAULT '[]' NOT NULL,
	`importance` real DEFAULT 0.5 NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`tier` text DEFAULT 'active' NOT NULL,
	`pinned` integer DEFAULT false NOT NULL,
	`task_id` text,
	`file_path` text,
	`line_start` integer,
	`line_end` integer,
	`tokens` integer NOT NULL,
	`content_hash` text NOT NULL,
	`generation` text DEFAULT 'young' NOT NULL,
	`gc_survival_count` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`touched_at` integer NOT NULL,
	`embedded_at` integer
);
--> statement-breakpoint
CREATE INDEX `items_tenant_project` ON `items` (`tenant_id`,`project`,`tier`);--> statement-breakpoint
CREATE INDEX `items_tenant_conversation` ON `items` (`tenant_id`,`conversation_id`,`position`);--> statement-breakpoint
CREATE INDEX `items_pending_embed` ON `items` (`embedded_at`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `items_tenant_hash` ON `items` (`tenant_id`,`project`,`content_hash`) WHERE conversation_id IS NULL;--> statement-breakpoint
CREATE TABLE `job_failures` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text,
	`message_id` text NOT NULL,
	`job_type` text NOT NULL,
	`body` text NOT NULL,
	`attempts` integer NOT NULL,
	`last_error` text,
	`failed_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `job_failures_message` ON `job_failures` (`message_id`);--> statement-breakpoint
CREATE TABLE `local_vectors` (
	`tenant_id` text NOT NULL,
	`chunk_id` integer NOT NULL,
	`item_id` text NOT NULL,
	`project` text NOT NULL,
	`kind` text NOT NULL,
	`type` text NOT NULL,
	`vector` blob NOT NULL,
	PRIMARY KEY(`tenant_id`, `chunk_id`)
);
--> statement-breakpoint
CREATE INDEX `local_vectors_scope` ON `local_vectors` (`tenant_id`,`project`);--> statement-breakpoint
CREATE TABLE `tenants` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `tool_calls` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`key_id` text NOT NULL,
	`tool` text NOT NULL,
	`project` text,
	`conversation_id` text,
	`started_at` integer NOT NULL,
	`duration_ms` real NOT NULL,
	`error_code` text
);
--> statement-breakpoint
CREATE INDEX `tool_calls_tenant_time` ON `tool_calls` (`tenant_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `tool_calls_tenant_tool` ON `tool_calls` (`tenant_id`,`tool`,`started_at`);--> statement-breakpoint
CREATE INDEX `tool_calls_tenant_conversation` ON `tool_calls` (`tenant_id`,`conversation_id`);