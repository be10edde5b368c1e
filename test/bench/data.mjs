import { readFileSync } from "node:fs";

// Evaluation data from ../shared/data (never shipped in the product).
const SHARED = new URL("../../../shared/data/", import.meta.url);

export function loadLocomo() {
  return JSON.parse(readFileSync(new URL("locomo/locomo-dev.json", SHARED), "utf8"));
}

export function loadMsmarco() {
  const lines = (file) =>
    readFileSync(new URL(`msmarco/${file}`, SHARED), "utf8")
      .split("\n")
      .filter(Boolean);
  const corpus = lines("corpus.jsonl").map((l) => JSON.parse(l));
  const queries = lines("queries.jsonl").map((l) => JSON.parse(l));
  const qrels = new Map();
  for (const line of lines("test.tsv")) {
    const [queryId, corpusId, score] = line.split("\t");
    if (!/^\d+$/.test(score ?? "")) continue; // header
    if (!qrels.has(queryId)) qrels.set(queryId, new Map());
    qrels.get(queryId).set(corpusId, Number(score));
  }
  return { corpus, queries: queries.filter((q) => qrels.has(q._id)), qrels };
}

/** "1:56 pm on 8 May, 2023" -> epoch ms (UTC). */
export function parseLocomoDate(text) {
  const m = text.match(/(\d+):(\d+)\s*(am|pm)\s+on\s+(\d+)\s+(\w+),?\s+(\d{4})/i);
  if (!m) throw new Error(`unparsed LoCoMo date: ${text}`);
  const [, h, min, ampm, day, month, year] = m;
  const hour = (Number(h) % 12) + (ampm.toLowerCase() === "pm" ? 12 : 0);
  return Date.parse(`${day} ${month} ${year} ${String(hour).padStart(2, "0")}:${min}:00 UTC`);
}
