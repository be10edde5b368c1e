ALTER TABLE `chunks` ADD `keyword_version` integer;--> statement-breakpoint
CREATE INDEX `chunks_keyword_outdated` ON `chunks` (`tenant_id`,`id`) WHERE keyword_version IS NULL;
-- Chunks written before this were indexed with irregular forms as written ("bought", "went"), which queries now look
-- up by their base form ("buy", "go"): the re-index sweep rewrites their keyword rows and forward index through this
-- index (the tokenization is the worker's, so not here in SQL).
