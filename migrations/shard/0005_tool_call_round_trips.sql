ALTER TABLE `tool_calls` ADD `d1_round_trips` real;--> statement-breakpoint
ALTER TABLE `tool_calls` ADD `d1_ms` real;