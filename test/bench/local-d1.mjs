// Extraction's progress read straight from the bench server's local D1 files (read-only): no tool says how far a
// conversation's extraction cursor has got, and memory_history logs nothing for a window that adds no memory, so
// the conversations' cursors and the extraction_windows rows are the exact record of what extraction read and cost.
import { readdirSync } from "node:fs";
import { join } from "node:path";

/** The bench's local state (worker.mjs keeps it under .bench/<BENCH_PORT>/state). */
const STATE = `.bench/${process.env.BENCH_PORT ?? 8799}/state`;
/** Read-only, waiting up to 10 s for the worker's write to finish: a read that met a write failed with SQLITE_BUSY. */
const READ_ONLY = { readOnly: true, timeout: 10_000 };

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
      const db = new DatabaseSync(join(dir, file), READ_ONLY);
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

/**
 * A function answering the billable units the worker recorded for the tenant and for the shards' own work (scheduled
 * passes, tenant id ''), summed over every hour and shard: {calls: {"tool:search": n, ...}, units: {column: sum},
 * parts: {"job:embed": {column: sum}, ...}}.
 * usage_hours is the worker's record of D1's own meta and its other bindings (src/core/tenants/usage-hours.ts).
 */
export function localUsageUnits(tenantId, columns, state = STATE) {
  return async () => {
    const { DatabaseSync } = await import("node:sqlite");
    const dir = join(state, "v3", "d1", "miniflare-D1DatabaseObject");
    const calls = {};
    const zero = () => Object.fromEntries(columns.map((c) => [c, 0]));
    const units = zero();
    const parts = {};
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
      const db = new DatabaseSync(join(dir, file), READ_ONLY);
      try {
        if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'usage_hours'").get()) continue;
        const rows = db
          .prepare(
            `SELECT tenant_id, source, name, SUM(calls) AS calls, ${columns.map((c) => `SUM(${c}) AS ${c}`).join(", ")}
             FROM usage_hours WHERE tenant_id IN (?, '') GROUP BY tenant_id, source, name`,
          )
          .all(tenantId);
        for (const row of rows) {
          const key = `${row.tenant_id === "" ? "shard" : row.source}:${row.name}`;
          calls[key] = (calls[key] ?? 0) + row.calls;
          parts[key] ??= zero();
          for (const c of columns) {
            units[c] += row[c];
            parts[key][c] += row[c];
          }
        }
      } finally {
        db.close();
      }
    }
    return { calls, units, parts };
  };
}

/**
 * The tenant's items not yet embedded and not yet linked (as GET /admin/tenants/:id/stats counts them), read from the
 * shard files: the bench waits on them without a request, which the worker would meter as the tenant's `admin` work.
 */
export async function localPendingItems(tenantId, state = STATE) {
  const { DatabaseSync } = await import("node:sqlite");
  const dir = join(state, "v3", "d1", "miniflare-D1DatabaseObject");
  const pending = { embeddings: 0, links: 0 };
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file), READ_ONLY);
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'items'").get()) continue;
      const row = db
        .prepare(
          `SELECT COALESCE(SUM(embedded_at IS NULL), 0) AS embeddings, COALESCE(SUM(linked_at IS NULL), 0) AS links
           FROM items WHERE tenant_id = ?`,
        )
        .get(tenantId);
      pending.embeddings += row.embeddings;
      pending.links += row.links;
    } finally {
      db.close();
    }
  }
  return pending;
}

/**
 * Each shard's record of its scheduled passes in the hour starting at `hour` (usage_hours, tenant '', job
 * scheduled_passes: src/jobs/pass-usage.ts), with how many chunks the shard holds: [{chunks, calls, read, written}],
 * and `written` summed over every hour, to tell when the passes have come to rest.
 */
export async function localPassHours(hour, state = STATE) {
  const { DatabaseSync } = await import("node:sqlite");
  const dir = join(state, "v3", "d1", "miniflare-D1DatabaseObject");
  const shards = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file), READ_ONLY);
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'chunks'").get()) continue;
      const passes = "FROM usage_hours WHERE tenant_id = '' AND source = 'job' AND name = 'scheduled_passes'";
      const row = db
        .prepare(`SELECT calls, d1_rows_read AS read, d1_rows_written AS written ${passes} AND hour = ?`)
        .get(hour);
      const ever = db.prepare(`SELECT COALESCE(SUM(d1_rows_written), 0) AS n ${passes}`).get().n;
      const chunks = db.prepare("SELECT COUNT(*) AS n FROM chunks").get().n;
      shards.push({ chunks, calls: row?.calls ?? 0, read: row?.read ?? 0, written: row?.written ?? 0, ever });
    } finally {
      db.close();
    }
  }
  return shards;
}
