CREATE TABLE `shard_identity` (
	`id` integer PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`ordinal` integer NOT NULL,
	`next_chunk_id` integer NOT NULL
);
