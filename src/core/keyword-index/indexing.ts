import { remainingQueries } from "../../db/invocation-queries";
import type { TenantScope } from "../../db/scope";
import { KEYWORD_VERSION } from "../../shared/base-forms";
import { keywordCode, tenantIndexText } from "../../shared/fts-text";
import { fillStatedTimes, STATED_BATCH } from "../search/stated-times";
import { recordBlockChanges } from "./block-build";
import { CONTEXT_WEIGHT } from "./bm25";
import { TermCounts, termFreqs } from "./term-freqs";
import { countKeywordWrites, keywordWriteUnits } from "./write-counter";

/**
 * Keyword ranking that depends on the caller's own data only.
 *
 * `chunks_fts` is one FTS5 table for every tenant, and FTS5's bm25() reads table-wide statistics
 * (document frequencies, row count, average length): one tenant's writes would reorder another's
 * results and reveal which words others use. So:
 * - each tenant indexes its tokens under a private prefix (fts-text.ts), so its postings are its own
 *   and a lookup never walks other tenants' postings;
 * - BM25 is computed in SQL (scores.ts), with FTS5's formula (k1 = 1.2, b = 0.75, column weights
 *   content 1.0, context 0.5, IDF floored at 1e-6), from the tenant's postings read through
 *   `chunks_fts_instance` (fts5vocab), its chunk lengths (chunks.fts_tokens) and its totals (keyword_stats);
 * - every statement joins the tenant's chunks, so even colliding prefixes cannot mix tenants.
 * Rows written before this scheme (fts_tokens IS NULL) are re-indexed in bounded batches by the cron
 * sweep; while a tenant has some left its queries also look up the plain terms of those rows. The same
 * batches give chunks written before migration 0016 their forward index (chunks.term_freqs, term-freqs.ts).
 */

export interface KeywordRow {
  content: string;
  context: string;
  /** Tokens in both columns: the row's BM25 document length. */
  tokens: number;
  /** The chunk's forward index, chunks.term_freqs (term-freqs.ts). */
  freqs: string;
}

/** A chunk's chunks_fts row in the tenant's private term space. */
export function keywordRow(tenantId: string, content: string, context: string): KeywordRow {
  const code = keywordCode(tenantId);
  const counts = new TermCounts(code);
  const a = tenantIndexText(code, content, (token) => counts.add(token, 1));
  const b = tenantIndexText(code, context, (token) => counts.add(token, CONTEXT_WEIGHT));
  return { content: a.text, context: b.text, tokens: a.tokens + b.tokens, freqs: counts.text() };
}

/** Adds newly indexed chunks to the tenant's statistics (in the batch that inserts them). */
export function countKeywordChunks(scope: TenantScope, chunks: number, tokens: number): D1PreparedStatement {
  return scope.d1
    .prepare(
      "INSERT INTO keyword_stats (tenant_id, chunks, tokens) VALUES (?, ?, ?) " +
        "ON CONFLICT (tenant_id) DO UPDATE SET chunks = chunks + excluded.chunks, tokens = tokens + excluded.tokens",
    )
    .bind(scope.tenantId, chunks, tokens);
}

/**
 * Removes the chunks of the items in `itemIdsJson` (a JSON array) from the tenant's statistics; must
 * run in the deleting batch before the chunks are deleted.
 */
export function uncountKeywordChunks(scope: TenantScope, itemIdsJson: string): D1PreparedStatement {
  return scope.d1
    .prepare(
      `UPDATE keyword_stats SET chunks = MAX(0, chunks - s.n), tokens = MAX(0, tokens - s.t), legacy_chunks = MAX(0, legacy_chunks - s.legacy)
       FROM (SELECT COUNT(fts_tokens) AS n, COALESCE(SUM(fts_tokens), 0) AS t, COUNT(*) - COUNT(fts_tokens) AS legacy
             FROM chunks WHERE tenant_id = ? AND item_id IN (SELECT value FROM json_each(?))) AS s
       WHERE keyword_stats.tenant_id = ?`,
    )
    .bind(scope.tenantId, itemIdsJson, scope.tenantId);
}

/**
 * Statements that give chunks a new context (the indexed second column): their chunks_fts rows are
 * rewritten in the tenant's term space, chunks.context and fts_tokens follow, and the tenant's BM25
 * statistics take the difference (rows indexed the old way move from the legacy count, as the re-index
 * sweep does). The caller re-queues embedding: the context is embedded with each chunk.
 */
export function rewriteChunkContexts(
  scope: TenantScope,
  chunks: { id: number; content: string; context: string; ftsTokens: number | null }[],
): D1PreparedStatement[] {
  if (chunks.length === 0) return [];
  const rows = chunks.map((c) => ({
    ...keywordRow(scope.tenantId, c.content, c.context),
    id: c.id,
    raw: c.context,
    old: c.ftsTokens,
  }));
  const json = JSON.stringify(rows.map((r) => [r.id, r.content, r.context, r.tokens, r.raw, r.freqs]));
  const rowsOf =
    "(SELECT j.value ->> 0 AS id, j.value ->> 1 AS content, j.value ->> 2 AS context, j.value ->> 3 AS tokens, j.value ->> 4 AS raw, j.value ->> 5 AS freqs FROM json_each(?) j)";
  const legacy = rows.filter((r) => r.old === null).length;
  const tokenDelta = rows.reduce((sum, r) => sum + r.tokens - (r.old ?? 0), 0);
  const written = keywordWriteUnits(rows) + keywordWriteUnits(rows.map((r) => ({ tokens: r.old })));
  return [
    countKeywordWrites(scope.d1, written),
    recordBlockChanges(scope.d1, `tenant_id = ? AND id IN (SELECT id FROM ${rowsOf})`, scope.tenantId, json),
    scope.d1.prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM ${rowsOf})`).bind(json),
    scope.d1
      .prepare(`INSERT INTO chunks_fts (rowid, content, context) SELECT id, content, context FROM ${rowsOf}`)
      .bind(json),
    scope.d1
      .prepare(
        `UPDATE chunks SET context = p.raw, fts_tokens = p.tokens, term_freqs = p.freqs, keyword_version = ${KEYWORD_VERSION} FROM ${rowsOf} AS p WHERE chunks.id = p.id AND chunks.tenant_id = ?`,
      )
      .bind(json, scope.tenantId),
    scope.d1
      .prepare(
        "UPDATE keyword_stats SET chunks = chunks + ?, tokens = tokens + ?, legacy_chunks = MAX(0, legacy_chunks - ?) WHERE tenant_id = ?",
      )
      .bind(legacy, tokenDelta, legacy, scope.tenantId),
  ];
}

/** Chunks re-indexed per batch, and the most text (prefixed, as JSON) one batch binds. */
export const REINDEX_BATCH = 200;
const REINDEX_MAX_CHARS = 500_000;

/** The rows of a re-index batch that still need it (JSON [[id, content, context, tokens, freqs]...]). */
const PENDING = `(SELECT j.value ->> 0 AS id, j.value ->> 1 AS content, j.value ->> 2 AS context, j.value ->> 3 AS tokens, j.value ->> 4 AS freqs
  FROM json_each(?) j JOIN chunks c ON c.id = j.value ->> 0 WHERE c.fts_tokens IS NULL)`;

/**
 * Re-indexes up to `limit` chunks written before tenant-private terms (tenant by tenant, so each
 * tenant's queries stop looking up plain terms as soon as its own rows are done): rewrites their
 * chunks_fts rows with the prefixed terms, records their length and moves them from the tenant's
 * legacy count to its statistics, all in one batch. Safe to run concurrently or to repeat (rows
 * already rewritten or deleted meanwhile are skipped). Returns how many chunks it read; fewer than
 * `limit` means none are left.
 */
export async function reindexLegacyChunks(d1: D1Database, limit = REINDEX_BATCH): Promise<number> {
  const { json, rows, read, units } = await rewrittenRows(d1, "fts_tokens IS NULL", limit);
  if (read === 0) return 0;
  await d1.batch([
    countKeywordWrites(d1, units),
    d1
      .prepare(
        `UPDATE keyword_stats SET chunks = chunks + s.n, tokens = tokens + s.t, legacy_chunks = MAX(0, legacy_chunks - s.n)
         FROM (SELECT c.tenant_id, COUNT(*) AS n, SUM(p.tokens) AS t FROM ${PENDING} p JOIN chunks c ON c.id = p.id GROUP BY c.tenant_id) AS s
         WHERE keyword_stats.tenant_id = s.tenant_id`,
      )
      .bind(json),
    recordBlockChanges(d1, `id IN (SELECT id FROM ${PENDING})`, json),
    d1.prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM ${PENDING})`).bind(json),
    d1
      .prepare(`INSERT INTO chunks_fts (rowid, content, context) SELECT id, content, context FROM ${PENDING}`)
      .bind(json),
    d1
      .prepare(
        `UPDATE chunks SET fts_tokens = p.tokens, term_freqs = p.freqs, keyword_version = ${KEYWORD_VERSION} FROM ${PENDING} AS p WHERE chunks.id = p.id`,
      )
      .bind(json),
  ]);
  return rows < read ? limit : read;
}

/** The rows of an outdated batch that still need it (JSON [[id, content, context, tokens, freqs]...]). */
const OUTDATED = `(SELECT j.value ->> 0 AS id, j.value ->> 1 AS content, j.value ->> 2 AS context, j.value ->> 3 AS tokens, j.value ->> 4 AS freqs,
  c.tenant_id, c.fts_tokens AS old_tokens
  FROM json_each(?) j JOIN chunks c ON c.id = j.value ->> 0 WHERE c.keyword_version IS NULL AND c.fts_tokens IS NOT NULL)`;

/**
 * Rewrites up to `limit` chunks indexed with an older keyword tokenization (chunks.keyword_version, base-forms.ts):
 * their chunks_fts rows and forward index anew, a change in their length into the tenant's statistics, and the
 * chunks recorded as changed for the posting blocks (block-build.ts: blocks hold their old terms), in one batch. Until a chunk is rewritten a query finds it by the words it was indexed with, except an
 * irregular form that the query now looks up by its base form. Safe to run concurrently or to repeat. Returns how
 * many chunks it read; fewer than `limit` means none are left.
 */
export async function reindexOutdatedChunks(d1: D1Database, limit = REINDEX_BATCH): Promise<number> {
  const { json, rows, read, units } = await rewrittenRows(
    d1,
    "keyword_version IS NULL AND fts_tokens IS NOT NULL",
    limit,
  );
  if (read === 0) return 0;
  await d1.batch([
    countKeywordWrites(d1, units),
    d1
      .prepare(
        `UPDATE keyword_stats SET tokens = tokens + s.t
         FROM (SELECT tenant_id, SUM(tokens - old_tokens) AS t FROM ${OUTDATED} GROUP BY tenant_id) AS s
         WHERE keyword_stats.tenant_id = s.tenant_id`,
      )
      .bind(json),
    recordBlockChanges(d1, `id IN (SELECT id FROM ${OUTDATED})`, json),
    d1.prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM ${OUTDATED})`).bind(json),
    d1
      .prepare(`INSERT INTO chunks_fts (rowid, content, context) SELECT id, content, context FROM ${OUTDATED}`)
      .bind(json),
    d1
      .prepare(
        `UPDATE chunks SET fts_tokens = p.tokens, term_freqs = p.freqs, keyword_version = ${KEYWORD_VERSION} FROM ${OUTDATED} AS p WHERE chunks.id = p.id`,
      )
      .bind(json),
  ]);
  return rows < read ? limit : read;
}

/**
 * Up to `limit` chunks that `pending` (SQL over chunks) selects, tenant by tenant, as their keyword rows are written now:
 * JSON [[id, content, context, tokens, freqs]...] of at most REINDEX_MAX_CHARS (one row at least); `rows` how many it
 * holds, `read` how many were read, `units` what rewriting them (a deletion and an insert each) adds to the keyword
 * write counter.
 */
async function rewrittenRows(
  d1: D1Database,
  pending: string,
  limit: number,
): Promise<{ json: string; rows: number; read: number; units: number }> {
  const { results } = await d1
    .prepare(`SELECT id, tenant_id, content, context FROM chunks WHERE ${pending} ORDER BY tenant_id, id LIMIT ?`)
    .bind(limit)
    .all<{ id: number; tenant_id: string; content: string; context: string }>();
  const rows: [number, string, string, number, string][] = [];
  let chars = 0;
  for (const chunk of results) {
    const row = keywordRow(chunk.tenant_id, chunk.content, chunk.context);
    chars += row.content.length + row.context.length + row.freqs.length;
    if (rows.length > 0 && chars > REINDEX_MAX_CHARS) break;
    rows.push([chunk.id, row.content, row.context, row.tokens, row.freqs]);
  }
  const units = 2 * keywordWriteUnits(rows.map(([, , , tokens]) => ({ tokens })));
  return { json: JSON.stringify(rows), rows: rows.length, read: results.length, units };
}

/** Chunks given their forward index per batch (only their text is read: no FTS rewrite). */
export const FORWARD_BATCH = 1_000;

/**
 * Gives up to `limit` chunks written before migration 0016 their forward index (chunks.term_freqs), through
 * the partial index of chunks without one; a tenant's searches read every posting until all of its chunks
 * have one (scores.ts). A chunk rewritten meanwhile already has one and is left as it is. Returns how
 * many chunks it read; fewer than `limit` means none are left.
 */
export async function fillForwardIndex(d1: D1Database, limit = FORWARD_BATCH): Promise<number> {
  const { results } = await d1
    // A legacy row (fts_tokens NULL) gets its forward index when it is re-indexed, which runs first.
    .prepare(
      "SELECT id, tenant_id, content, context FROM chunks WHERE term_freqs IS NULL AND fts_tokens IS NOT NULL ORDER BY tenant_id, id LIMIT ?",
    )
    .bind(limit)
    .all<{ id: number; tenant_id: string; content: string; context: string }>();
  if (results.length === 0) return 0;
  const rows: [number, string][] = [];
  let chars = 0;
  for (const chunk of results) {
    const freqs = termFreqs(keywordCode(chunk.tenant_id), chunk.content, chunk.context, CONTEXT_WEIGHT);
    chars += freqs.length;
    if (rows.length > 0 && chars > REINDEX_MAX_CHARS) break;
    rows.push([chunk.id, freqs]);
  }
  await d1
    .prepare(
      "UPDATE chunks SET term_freqs = j.value ->> 1 FROM json_each(?) j WHERE chunks.id = j.value ->> 0 AND chunks.term_freqs IS NULL",
    )
    .bind(JSON.stringify(rows))
    .run();
  return rows.length < results.length ? limit : results.length;
}

/**
 * Runs re-index batches (legacy rows, then rows of an older tokenization), then forward-index batches, then
 * stated-times batches (stated-times.ts), until none are left, `maxBatches` ran or the invocation's D1 queries would not
 * cover one more; true if chunks may remain.
 */
export async function reindexLegacyBatches(d1: D1Database, maxBatches: number): Promise<boolean> {
  let batches = 0;
  // A batch starts only while the invocation's D1 queries cover the largest one (src/db/invocation-queries.ts).
  const next = () => {
    if (batches >= maxBatches || remainingQueries() < QUERIES_PER_BATCH) return false;
    batches++;
    return true;
  };
  while (next()) {
    if ((await reindexLegacyChunks(d1)) < REINDEX_BATCH) break;
  }
  while (next()) {
    if ((await reindexOutdatedChunks(d1)) < REINDEX_BATCH) break;
  }
  while (next()) {
    if ((await fillForwardIndex(d1)) < FORWARD_BATCH) break;
  }
  while (next()) {
    if ((await fillStatedTimes(d1)) < STATED_BATCH) return false;
  }
  return true;
}

/** D1 queries the largest batch above runs: an outdated batch's read and its six statements. */
const QUERIES_PER_BATCH = 7;

/** A re-index job chain that has not run for this long is taken to be lost. */
export const REINDEX_CHAIN_STALE_MS = 10 * 60_000;

/**
 * Records that a re-index job chain is alive. With `onlyIfStale`, claims the chain only when none ran
 * within REINDEX_CHAIN_STALE_MS (returns false if another one is alive), so sweeps do not pile up chains.
 */
export async function reindexHeartbeat(d1: D1Database, now: number, onlyIfStale = false): Promise<boolean> {
  const claimed = await d1
    .prepare(
      "INSERT INTO keyword_reindex (id, heartbeat_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at WHERE heartbeat_at <= ? RETURNING id",
    )
    .bind(now, onlyIfStale ? now - REINDEX_CHAIN_STALE_MS : now)
    .first();
  return claimed !== null;
}
