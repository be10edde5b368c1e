// `npm run replay -- reads [--state DIR]`: search's real code run in this process against a bench's local D1 through
// Miniflare, which answers D1's own meta (rows read per statement, as workerd's SQLite counts them and D1 bills them),
// over the cost bench's questions on the state's largest tenant. Prints rows read and round trips per search, and each
// statement's share, so a change to the keyword index can be measured in seconds against a state filled once
// (`npm run bench -- cost` leaves none: fill one with `COST_SIZES=... npm run bench -- fill`).
// Reads ../shared/data (benchmarks may; tests never do).

import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { migrateAll } from "../../../scripts/migrate.mjs";
import { SEARCH_STAGES } from "../../../src/config";
import { searchChunks } from "../../../src/core/search/search";
import { tenantScope } from "../../../src/db/scope";
import { type StatementTally, talliedD1 } from "../../../src/jobs/statement-tally";
import type { Services } from "../../../src/ports";
import { benchData } from "../cost.mjs";
import { buildBlocks } from "./replay-state";

const SHARDS = ["SHARD_0", "SHARD_1"];

/** Rows read and trips per search over `count` of the cost bench's questions; lines to print. */
export async function replayReads(stateDir: string, count = 40): Promise<string[]> {
  // A copy: Miniflare writes its own bookkeeping beside the files, and the bench's state stays as it was left.
  const dir = mkdtempSync(join(tmpdir(), "context-edge-reads-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  cpSync(stateDir, dir, { recursive: true });
  // Migrations written since the state was filled, as the worker would have them applied.
  await migrateAll({ persistTo: dir, quiet: true });
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      workers: [{ modules: true, script: "export default {}", d1Databases: SHARDS }],
      resourcePersistencePath: join(dir, "v3"),
    }),
  );
  try {
    let shard: D1Database | null = null;
    let tenant = "";
    let chunks = -1;
    for (const name of SHARDS) {
      const d1 = (await mf.getD1Database(name)) as unknown as D1Database;
      const row = await d1
        .prepare("SELECT tenant_id, chunks FROM keyword_stats ORDER BY chunks DESC LIMIT 1")
        .first<{ tenant_id: string; chunks: number }>();
      if (row && row.chunks > chunks) [shard, tenant, chunks] = [d1, row.tenant_id, row.chunks];
    }
    if (!shard) throw new Error(`no tenant under ${stateDir}`);
    // The minute passes bring the posting blocks up to date, as they would have by then in production.
    const passes = await buildBlocks(shard, tenant);
    const tally: StatementTally = new Map();
    let trips = 0;
    // Each statement run alone is a trip, a batch is one: the wrappers hand the binding back its own statements.
    const originals = new WeakMap<object, D1PreparedStatement>();
    const wrap = (s: D1PreparedStatement): D1PreparedStatement => {
      const wrapped = {
        bind: (...values: unknown[]) => wrap(s.bind(...values)),
        all: () => (trips++, s.all()),
        run: () => (trips++, s.run()),
        first: (column?: string) => (trips++, column ? s.first(column) : s.first()),
        raw: (options?: { columnNames?: boolean }) => (trips++, s.raw(options as never)),
      } as unknown as D1PreparedStatement;
      originals.set(wrapped, s);
      return wrapped;
    };
    const counted = {
      prepare: (sql: string) => wrap(shard!.prepare(sql)),
      batch: (statements: D1PreparedStatement[]) => (
        trips++, shard!.batch(statements.map((s) => originals.get(s) ?? s))
      ),
    } as unknown as D1Database;
    const d1 = talliedD1(counted, tally);
    const services = {
      config: {
        searchStages: new Set(SEARCH_STAGES.filter((s) => !(process.env.WITHOUT ?? "").split(",").includes(s))),
      },
      embedder: { semantic: false, embed: async () => [] },
      vectors: { getVectors: async () => new Map(), query: async () => [] },
    } as unknown as Services;
    const questions = benchData().questions.slice(0, count) as string[];
    const scope = tenantScope(d1, tenant);
    const top: string[] = [];
    for (const query of questions) {
      const hits = await searchChunks(scope, services, query, {}, 10);
      top.push(hits.map((h) => h.chunkId).join(","));
    }
    const read = [...tally.values()].reduce((sum, c) => sum + c.read, 0);
    const lines = [
      `posting blocks built in ${passes.passes} passes: ${passes.read} rows read, ${passes.written} written, ${passes.words} words`,
      `${chunks} chunks: ${(read / questions.length).toFixed(1)} rows read and ${(trips / questions.length).toFixed(2)} round trips a search (${questions.length} cost bench questions)`,
    ];
    for (const [sql, cost] of [...tally].sort((a, b) => b[1].read - a[1].read))
      lines.push(
        `  ${(cost.read / questions.length).toFixed(1).padStart(9)} rows a search, ${cost.runs} runs: ${sql.slice(0, 140)}`,
      );
    lines.push(`  top 10 ids: ${hash(top.join(";"))}`);
    return lines;
  } finally {
    await mf.dispose();
  }
}

/** A short digest of the results, to see at a glance whether two runs ranked alike. */
function hash(text: string): string {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(16);
}
