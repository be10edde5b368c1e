CREATE TABLE `project_tasks` (
	`tenant_id` text NOT NULL,
	`project` text NOT NULL,
	`current_task_id` text,
	`previous_task_id` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `project`)
);
--> statement-breakpoint
CREATE TABLE `summaries` (
	`tenant_id` text NOT NULL,
	`conversation_id` text NOT NULL,
	`version` integer NOT NULL,
	`summary` text NOT NULL,
	`code_blocks` text DEFAULT '[]' NOT NULL,
	`key_insights` text DEFAULT '[]' NOT NULL,
	`importance_score` real NOT NULL,
	`message_count` integer NOT NULL,
	`tokens_used` integer NOT NULL,
	`token_limit` integer NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `conversation_id`, `version`)
);
--> statement-breakpoint
ALTER TABLE `conversations` ADD `summarized_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `conversations` ADD `summarized_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `items` ADD `linked_at` integer;--> statement-breakpoint
CREATE INDEX `items_pending_link` ON `items` (`linked_at`,`created_at`);--> statement-breakpoint
CREATE INDEX `items_tenant_task` ON `items` (`tenant_id`,`project`,`task_id`);