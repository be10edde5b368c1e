// The baseline: plain SQLite FTS5 over the same texts, in this process (node:sqlite), ranked by FTS5's
// own bm25() — what a developer gets from FTS5 alone: the same tokenizer as chunks_fts, the same
// function words left out of the query, no context column, nothing beyond the words.
import { DatabaseSync } from "node:sqlite";
import { STOPWORDS } from "../../src/shared/stopwords.ts";

/** Indexes `documents` ({ id, project, text }); returns search(query, project, limit) -> ids, best first. */
export function plainBm25(documents) {
  const db = new DatabaseSync(":memory:");
  db.exec(
    "CREATE VIRTUAL TABLE docs USING fts5(text, project UNINDEXED, id UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')",
  );
  const insert = db.prepare("INSERT INTO docs (text, project, id) VALUES (?, ?, ?)");
  for (const d of documents) insert.run(d.text, d.project, d.id);
  const search = db.prepare("SELECT id FROM docs WHERE docs MATCH ? AND project = ? ORDER BY bm25(docs) LIMIT ?");
  return (query, project, limit) => {
    const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
    const meaningful = words.filter((w) => !STOPWORDS.has(w));
    const terms = (meaningful.length > 0 ? meaningful : words).map((w) => `"${w}"`);
    return terms.length === 0 ? [] : search.all(terms.join(" OR "), project, limit).map((r) => r.id);
  };
}

/** LoCoMo's turns as documents (id = dia id, project = conversation), with their photo captions. */
export function locomoTurns(samples) {
  return samples.flatMap((sample) => {
    const conversation = sample.conversation;
    const turns = [];
    for (let n = 1; conversation[`session_${n}`]; n++) turns.push(...conversation[`session_${n}`]);
    return turns.map((t) => ({
      id: t.dia_id,
      project: sample.sample_id,
      text: t.blip_caption ? `${t.text} [shares a photo: ${t.blip_caption}]` : t.text,
    }));
  });
}
