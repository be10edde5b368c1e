-- Hand-written: drizzle cannot express FTS5. Keyword search over chunk text, ranked by BM25.
-- The app writes each chunk's text here in the same D1 batch as the chunk (rowid = chunks.id), after
-- src/core/fts-text.ts spaces out CJK characters so each is a token (unicode61 would make a whole CJK
-- run one token, and SQL triggers cannot do that normalisation). porter + unicode61: English stemming,
-- case and diacritic folding.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  content,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
