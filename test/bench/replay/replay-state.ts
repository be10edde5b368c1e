import { readdirSync, readFileSync } from "node:fs";
import type { DatabaseSync } from "node:sqlite";
import {
  type BlocksReportRow,
  blocksReport,
  blocksReportStatement,
  refreshPostingBlocks,
} from "../../../src/core/keyword-index/block-pass";
import { type StatementTally, talliedD1 } from "../../../src/jobs/statement-tally";

// A bench's state brought up to this code before a replay: the migrations written since it was filled, and the
// posting blocks the minute passes would have built by then.

/** Applies the shard migrations the copy has not had (wrangler records them in d1_migrations). */
export function migrateCopy(db: DatabaseSync): string[] {
  const applied = new Set(
    (db.prepare("SELECT name FROM d1_migrations").all() as { name: string }[]).map((r) => r.name),
  );
  const dir = new URL("../../../migrations/shard/", import.meta.url);
  const pending = readdirSync(dir)
    .filter((f) => f.endsWith(".sql") && !applied.has(f))
    .sort();
  for (const file of pending) {
    for (const sql of readFileSync(new URL(file, dir), "utf8").split("--> statement-breakpoint"))
      if (sql.trim()) db.exec(sql);
    db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").run(file);
  }
  return pending;
}

/** Runs the posting blocks pass until the tenant has nothing due; what it read and wrote (D1's meta, where given). */
export async function buildBlocks(d1: D1Database, tenant: string) {
  const tally: StatementTally = new Map();
  const tallied = talliedD1(d1, tally);
  let passes = 0;
  for (; passes < 10_000; passes++) {
    const report = blocksReport((await blocksReportStatement(d1, tenant).first<BlocksReportRow>()) ?? undefined);
    if (report.due === 0) break;
    await refreshPostingBlocks(tallied, Date.now());
  }
  const words = blocksReport((await blocksReportStatement(d1, tenant).first<BlocksReportRow>()) ?? undefined).words;
  const costs = [...tally.values()];
  return {
    passes,
    words,
    read: costs.reduce((sum, c) => sum + c.read, 0),
    written: costs.reduce((sum, c) => sum + c.written, 0),
  };
}
