CREATE TABLE `tenant_moves` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`source` text NOT NULL,
	`target` text NOT NULL,
	`state` text NOT NULL,
	`progress` text NOT NULL,
	`copied` integer DEFAULT 0 NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	`verified` text,
	`error` text,
	`step` integer DEFAULT 0 NOT NULL,
	`started_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`switched_at` integer,
	`finished_at` integer
);
