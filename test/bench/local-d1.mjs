// Extraction's progress read straight from the bench server's local D1 files (read-only): no tool says how far a
// conversation's extraction cursor has got, and memory_history logs nothing for a window that adds no memory, so
// the conversations' cursors and the extraction_windows rows are the exact record of what extraction read and cost.
import { readdirSync } from "node:fs";
import { join } from "node:path";

/** The bench's local state (worker.mjs keeps it under .bench/<BENCH_PORT>/state). */
const STATE = `.bench/${process.env.BENCH_PORT ?? 8799}/state`;

/**
 * A function answering the tenant's conversations, those with turns extraction has not read yet, and every
 * extraction window it recorded ({id, status, calls, model, tokensIn, tokensOut, neurons, latencyMs}).
 */
export function localExtractionProgress(tenantId, state = STATE) {
  return async () => {
    // Imported here: node:sqlite warns that it is experimental, and only the real bench needs it.
    const { DatabaseSync } = await import("node:sqlite");
    const dir = join(state, "v3", "d1", "miniflare-D1DatabaseObject");
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
      const db = new DatabaseSync(join(dir, file), { readOnly: true });
      try {
        const shard = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'extraction_windows'").get();
        if (!shard) continue;
        const counts = db
          .prepare(
            `SELECT COUNT(*) AS conversations, COALESCE(SUM(extracted_count < message_count), 0) AS unread
             FROM conversations WHERE tenant_id = ?`,
          )
          .get(tenantId);
        if (counts.conversations === 0) continue;
        const windows = db
          .prepare(
            `SELECT id, status, calls, model, tokens_in AS tokensIn, tokens_out AS tokensOut, neurons,
               latency_ms AS latencyMs FROM extraction_windows WHERE tenant_id = ?`,
          )
          .all(tenantId);
        return { conversations: counts.conversations, unread: counts.unread, windows };
      } finally {
        db.close();
      }
    }
    // memory_ingest has stored the conversations before it answered: not finding them means the layout changed.
    throw new Error(`no D1 file under ${dir} holds tenant ${tenantId}'s conversations`);
  };
}
