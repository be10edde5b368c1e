// The baseline for LoCoMo: plain SQLite FTS5 over the same turn texts, in this process (node:sqlite),
// ranked by FTS5's own bm25() — what a developer gets from FTS5 alone: the same tokenizer as chunks_fts,
// the same function words left out of the query, no context column, nothing beyond the words.
import { DatabaseSync } from "node:sqlite";
import { STOPWORDS } from "../../src/core/shared/stopwords.ts";

export function plainBm25(samples) {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE VIRTUAL TABLE turns USING fts5(content, project UNINDEXED, dia UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')");
  const insert = db.prepare("INSERT INTO turns (content, project, dia) VALUES (?, ?, ?)");
  for (const sample of samples) {
    const conversation = sample.conversation;
    for (let n = 1; conversation[`session_${n}`]; n++) {
      for (const t of conversation[`session_${n}`]) insert.run(t.blip_caption ? `${t.text} [shares a photo: ${t.blip_caption}]` : t.text, sample.sample_id, t.dia_id);
    }
  }
  const search = db.prepare("SELECT dia FROM turns WHERE turns MATCH ? AND project = ? ORDER BY bm25(turns) LIMIT ?");
  /** The dia ids of the best `limit` turns of a project for a question. */
  return (question, project, limit) => {
    const words = [...new Set(question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
    const meaningful = words.filter((w) => !STOPWORDS.has(w));
    const terms = (meaningful.length > 0 ? meaningful : words).map((w) => `"${w}"`);
    return terms.length === 0 ? [] : search.all(terms.join(" OR "), project, limit).map((r) => r.dia);
  };
}
