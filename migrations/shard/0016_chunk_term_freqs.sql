ALTER TABLE `chunks` ADD `term_freqs` text;--> statement-breakpoint
-- Chunks written before this have no forward index: the re-index sweep fills them through this index (it needs the
-- stemmer, so not here in SQL), and a tenant's searches read every posting until none of its chunks is left in it.
CREATE INDEX `chunks_missing_term_freqs` ON `chunks` (`tenant_id`,`id`) WHERE term_freqs IS NULL;