-- Hand-written: drizzle cannot express FTS5. Keyword search over chunks, ranked by BM25.
-- Two columns: the chunk's text and its context (speaker and previous turn, or document path and tags;
-- see chunks.context); queries weight context lower (src/core/search.ts).
-- The app writes each chunk here in the same D1 batch as the chunk (rowid = chunks.id), after
-- src/core/fts-text.ts spaces out CJK letters so each is a token (unicode61 would make a whole CJK
-- run one token, and SQL triggers cannot do that normalisation). porter + unicode61: English
-- stemming, case and diacritic folding.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  content,
  context,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
