-- Hand-written. Document frequencies by term (term, doc = rows holding it, cnt = occurrences), read by
-- term: relevance feedback (src/core/memory/search-expansion.ts) weighs candidate words by their IDF
-- without reading their postings. Terms are tenant-private (src/core/shared/fts-text.ts), so a term's
-- count is its tenant's own.
CREATE VIRTUAL TABLE `chunks_fts_row` USING fts5vocab(chunks_fts, row);
