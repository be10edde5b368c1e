// `npm run replay -- locomo|msmarco|growth|extraction [--db FILE]`: search's real code (searchChunks) run in this process over a D1 file
// that a bench left (.bench/<port>/state), through Node's SQLite (sqlite-d1.ts), as the bench's server would search it
// with its defaults (local lexical embedder: no vector list). Seconds where the bench takes minutes, so a ranking or
// SQL change can be tried many times: `locomo` prints evidence recall@10 by category and the held-out folds' means,
// as `npm run bench -- locomo` does (the same figures on the same data), `msmarco` nDCG@10 beside plain FTS5 BM25 as
// `npm run bench -- msmarco` prints it, `growth` each tenant's D1 time per statement over the MS MARCO queries.
// `extraction` the extraction bench's recall, turns only and with derived memories (replay-extraction.ts). `grounding`
// needs no D1: extraction's source check over LoCoMo's observations (replay-grounding.ts). `reads [--state DIR]`: rows
// read and round trips a search as D1 counts them, statement by statement (replay-reads.ts).
// Start with the bench whose data it needs (`npm run bench -- locomo`, `msmarco`, `growth` or `extraction`). WITHOUT=feedback,when
// leaves those stages out (SEARCH_STAGES), to see what each adds.
// Reads ../shared/data (benchmarks may; tests never do).

import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { SEARCH_STAGES } from "../../../src/config";
import { searchChunks } from "../../../src/core/search/search";
import { tenantScope } from "../../../src/db/scope";
import type { Services } from "../../../src/ports";
import { loadLocomo, loadMsmarco } from "../data.mjs";
import type { LocomoSample } from "../extraction.mjs";
import { assignFolds, foldFigures, groupsOf, summarize } from "../folds.mjs";
import { mean, ndcgAt, recallAt, uniqueInOrder } from "../metrics.mjs";
import { plainBm25 } from "../plain-bm25.mjs";
import { replayExtraction } from "./replay-extraction";
import { replayGrounding } from "./replay-grounding";
import { replayReads } from "./replay-reads";
import { buildBlocks, migrateCopy } from "./replay-state";
import { sqliteD1, type Timed } from "./sqlite-d1";

const CATEGORIES: Record<string, string> = {
  1: "multi-hop",
  2: "temporal",
  3: "open-domain",
  4: "single-hop",
  5: "adversarial",
};
const [suite, ...rest] = process.argv.slice(2);
const dbArg = rest.indexOf("--db");
if (suite === "grounding") {
  console.log(replayGrounding(loadLocomo() as unknown as LocomoSample[]).join("\n"));
  process.exit(0);
}
if (suite === "reads") {
  const stateArg = rest.indexOf("--state");
  const state = stateArg >= 0 ? rest[stateArg + 1]! : `.bench/${process.env.BENCH_PORT ?? 8799}/state`;
  console.log((await replayReads(state)).join("\n"));
  process.exit(0);
}
if (suite !== "locomo" && suite !== "msmarco" && suite !== "growth" && suite !== "extraction") {
  console.error(
    "usage: npm run replay -- locomo|msmarco|growth|extraction [--db FILE] | grounding | reads [--state DIR]",
  );
  process.exit(2);
}
const file = dbArg >= 0 ? rest[dbArg + 1]! : largestD1(`.bench/${process.env.BENCH_PORT ?? 8799}/state`);
const db = checkpointedCopy(file);
const migrated = migrateCopy(db);
const log: Timed[] = [];
const d1 = sqliteD1(db, log);
// The bench server's search: every stage, no vector part (the local embedder is lexical: weight 0), no reranker.
const services = {
  config: { searchStages: new Set(SEARCH_STAGES.filter((s) => !(process.env.WITHOUT ?? "").split(",").includes(s))) },
  embedder: { semantic: false, embed: async () => [] },
  vectors: { getVectors: async () => new Map(), query: async () => [] },
} as unknown as Services;
const tenants = db.prepare("SELECT tenant_id, chunks FROM keyword_stats ORDER BY chunks").all() as {
  tenant_id: string;
  chunks: number;
}[];
const pct = (x: number) => (100 * x).toFixed(1);
console.log(`${file}: ${tenants.map((t) => `${t.chunks} chunks`).join(", ")}`);
if (migrated.length > 0) console.log(`  migrated: ${migrated.join(", ")}`);
for (const { tenant_id: tenant } of tenants) {
  const built = await buildBlocks(d1, tenant);
  if (built.passes > 0) console.log(`  posting blocks: ${built.words} words in ${built.passes} passes`);
}
// REPLAY_TOP=<file>: each query's top 10 chunk ids, a line each, to compare two runs' rankings.
const tops: string[] = [];
const noteTop = (query: string, hits: { chunkId: number }[]) =>
  tops.push(JSON.stringify([query, hits.slice(0, 10).map((h) => h.chunkId)]));
process.on("exit", () => {
  if (process.env.REPLAY_TOP) writeFileSync(process.env.REPLAY_TOP, `${tops.join("\n")}\n`);
});

if (suite === "extraction") {
  const samples = loadLocomo() as unknown as LocomoSample[];
  const lines = await replayExtraction(db, d1, services, tenants.at(-1)!.tenant_id, samples, CATEGORIES);
  console.log(lines.join("\n"));
} else if (suite === "locomo") {
  const samples = loadLocomo() as {
    sample_id: string;
    conversation: Record<string, { speaker: string; dia_id: string; text: string; blip_caption?: string }[] | string>;
    qa: { question: string; category: number; evidence?: string[] }[];
  }[];
  const tenant = tenants.at(-1)!.tenant_id;
  // The turn each item is (the bench keeps the map in memory): by its session and text, as the bench wrote them.
  const turnOf = new Map<string, string>();
  for (const s of samples) {
    for (let n = 1; Array.isArray(s.conversation[`session_${n}`]); n++) {
      for (const turn of s.conversation[`session_${n}`] as { dia_id: string; text: string; blip_caption?: string }[]) {
        turnOf.set(
          `${s.sample_id}:session_${n}\u0000${turn.blip_caption ? `${turn.text} [shares a photo: ${turn.blip_caption}]` : turn.text}`,
          turn.dia_id,
        );
      }
    }
  }
  const dia = new Map<string, string>();
  for (const r of db.prepare("SELECT id, conversation_id, content FROM items WHERE tenant_id = ?").all(tenant) as {
    id: string;
    conversation_id: string;
    content: string;
  }[]) {
    const id = turnOf.get(`${r.conversation_id}\u0000${r.content}`);
    if (id) dia.set(r.id, id);
  }
  const questions = samples.flatMap((s) =>
    s.qa
      .map((qa) => ({
        ...qa,
        project: s.sample_id,
        evidence: new Set((qa.evidence ?? []).join(" ").match(/D\d+:\d+/g) ?? []),
      }))
      .filter((qa) => qa.evidence.size > 0),
  );
  const scope = tenantScope(d1, tenant);
  const recalls: number[] = [];
  for (const qa of questions) {
    const hits = await searchChunks(scope, services, qa.question, { projects: [qa.project] }, 10);
    noteTop(qa.question, hits);
    recalls.push(recallAt(uniqueInOrder(hits.flatMap((h) => dia.get(h.itemId) ?? [])), qa.evidence, 10));
  }
  const byCategory = Object.entries(CATEGORIES).map(
    ([cat, label]) =>
      `${label} ${pct(mean(questions.flatMap((qa, i) => (String(qa.category) === cat ? [recalls[i]!] : []))))}`,
  );
  const figures = foldFigures(questions, recalls, assignFolds(samples), groupsOf(CATEGORIES));
  console.log(
    `LoCoMo evidence R@10 (%), ${questions.length} questions, ${dia.size} turns: all ${pct(mean(recalls))} | ${byCategory.join(" | ")}`,
  );
  console.log(
    `  validation folds' mean: ${["all", ...Object.values(CATEGORIES)].map((g) => `${g} ${pct(summarize(figures, g).validation)}`).join(" | ")}`,
  );
} else if (suite === "msmarco") {
  const { corpus, queries, qrels } = loadMsmarco() as {
    corpus: { _id: string; title: string; text: string }[];
    queries: { _id: string; text: string }[];
    qrels: Map<string, Map<string, number>>;
  };
  const tenant = tenants.at(-1)!.tenant_id;
  const stored = (p: { title: string; text: string }) => (p.title ? `${p.title}\n${p.text}` : p.text);
  // The passage each item is, by its text as the bench stored it (duplicate passages share an item).
  const idsOf = new Map<string, string[]>();
  for (const p of corpus) idsOf.set(stored(p), [...(idsOf.get(stored(p)) ?? []), p._id]);
  const passages = new Map<string, string[]>();
  for (const r of db.prepare("SELECT id, content FROM items WHERE tenant_id = ?").all(tenant) as {
    id: string;
    content: string;
  }[])
    passages.set(r.id, idsOf.get(r.content) ?? []);
  const baseline = plainBm25(corpus.map((p) => ({ id: p._id, project: "msmarco", text: stored(p) })));
  const scope = tenantScope(d1, tenant);
  const hybrid: number[] = [];
  const bm25: number[] = [];
  for (const q of queries) {
    const hits = await searchChunks(scope, services, q.text, { projects: ["msmarco"] }, 10);
    noteTop(q.text, hits);
    hybrid.push(ndcgAt(uniqueInOrder(hits.flatMap((h) => passages.get(h.itemId) ?? [])), qrels.get(q._id)!, 10));
    bm25.push(ndcgAt(baseline(q.text, "msmarco", 10), qrels.get(q._id)!, 10));
  }
  const wins = hybrid.filter((h, i) => h > bm25[i]! + 1e-9).length;
  const losses = hybrid.filter((h, i) => h < bm25[i]! - 1e-9).length;
  console.log(
    `MS MARCO nDCG@10, ${queries.length} queries, ${passages.size} passages: search ${mean(hybrid).toFixed(3)} | plain FTS5 BM25 ${mean(bm25).toFixed(3)} | ${wins} queries better, ${losses} worse`,
  );
} else {
  const queries = loadMsmarco().queries;
  for (const { tenant_id: tenant, chunks } of tenants) {
    const project = (
      db.prepare("SELECT project FROM items WHERE tenant_id = ? LIMIT 1").get(tenant) as { project: string }
    ).project;
    const scope = tenantScope(d1, tenant);
    const perStatement: number[] = [];
    for (const q of queries) {
      log.length = 0;
      await searchChunks(scope, services, q.text, { projects: [project] }, 10);
      log.forEach((t, i) => (perStatement[i] = (perStatement[i] ?? 0) + t.ms));
    }
    const each = perStatement.map((ms) => ms / queries.length);
    console.log(
      `  ${String(chunks).padStart(7)} chunks: ${each.reduce((a, b) => a + b, 0).toFixed(2)} ms of SQLite a search (${each.map((ms) => ms.toFixed(2)).join(" + ")}), ${queries.length} MS MARCO queries`,
    );
  }
}

/**
 * The largest D1 file under a bench's state folder: the shard that holds its data. Only D1's own folder is read:
 * wrangler's local trace store (observability) is a larger SQLite file beside it.
 */
function largestD1(dir: string): string {
  const files: string[] = [];
  const walk = (d: string) =>
    readdirSync(d, { withFileTypes: true }).forEach((e) =>
      e.isDirectory()
        ? walk(join(d, e.name))
        : e.name.endsWith(".sqlite") && e.name !== "metadata.sqlite" && files.push(join(d, e.name)),
    );
  const d1 = join(dir, "v3", "d1");
  walk(existsSync(d1) ? d1 : dir);
  if (files.length === 0) throw new Error(`no D1 file under ${dir}: run the bench first`);
  return files.sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
}

/**
 * A copy of the D1 file with its write-ahead log folded in: a bench's server is killed, not closed, and reading
 * through a large log (160 MB after the growth bench) made every page read slower than the search it measures.
 */
function checkpointedCopy(source: string): DatabaseSync {
  const dir = mkdtempSync(join(tmpdir(), "context-edge-replay-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const copy = join(dir, "d1.sqlite");
  copyFileSync(source, copy);
  if (existsSync(`${source}-wal`)) copyFileSync(`${source}-wal`, `${copy}-wal`);
  const db = new DatabaseSync(copy);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return db;
}
