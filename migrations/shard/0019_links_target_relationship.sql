-- links_target with the relationship (src/db/schema.ts): search skips a type it does not count inside the index.
DROP INDEX `links_target`;--> statement-breakpoint
CREATE INDEX `links_target` ON `links` (`tenant_id`,`target_type`,`target_id`,`relationship_type`);