-- What keyword search reads of each posting's chunk (src/core/memory/keyword-scores.ts, INDEXED BY chunks_postings).
CREATE INDEX `chunks_postings` ON `chunks` (`id`,`tenant_id`,`project`,`fts_tokens`);
