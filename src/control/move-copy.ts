import { countKeywordWrites, countKeywordWritesOf, keywordWriteUnits } from "../core/keyword-index/write-counter";
import { boundedGroups } from "../shared/bounded-groups";
import type { TenantTable } from "./tenant-tables";

/**
 * The copying half of a tenant move: one table page at a time from the source shard to the target, by
 * primary key, as a diff: rows missing or different on the target are written, rows the source no longer has
 * are deleted. Run over a table while writes go on, it copies; run again while the source is frozen, it
 * catches up exactly and counts rows and checksums on both sides. Pages are idempotent, so a page cut off by
 * a crash is simply run again.
 */

/** Where a pass stands: the table (index into the table list) and the last key done in it. */
export interface PassCursor {
  table: number;
  after: unknown[] | null;
}

/** Rows seen and an order-dependent checksum of them (FNV-1a, two 32-bit lanes), per side of a table. */
export interface Tally {
  rows: number;
  a: number;
  b: number;
}

export interface PageResult {
  /** Source rows in the page. */
  rows: number;
  /** Rows written or deleted on the target. */
  changed: number;
  /** The key to continue after, or null when the table is done. */
  next: unknown[] | null;
}

/** Rows a page reads: items may be 100,000 characters each, so fewer of them. */
const PAGE_ROWS: Record<string, number> = { items: 40, cache_entries: 40 };
const DEFAULT_PAGE_ROWS = 200;
/** JSON characters per write statement: D1 caps a bound value at 2 MB, and a UTF-16 unit takes at most 3 bytes. */
const WRITE_CHARS = 600_000;

export const emptyTally = (): Tally => ({ rows: 0, a: 0x811c9dc5, b: 0x050c5d1f });

export function sameTally(x: Tally, y: Tally): boolean {
  return x.rows === y.rows && x.a === y.a && x.b === y.b;
}

export function tallyHex(t: Tally): string {
  return (t.a >>> 0).toString(16).padStart(8, "0") + (t.b >>> 0).toString(16).padStart(8, "0");
}

function tallyRow(t: Tally, row: string): void {
  let { a, b } = t;
  for (let i = 0; i < row.length; i++) {
    const c = row.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  t.a = a >>> 0;
  t.b = b >>> 0;
  t.rows++;
}

/** The columns a page reads: blobs as hex; a chunk's keyword row rides with it (chunks_fts has no tenant_id). */
function selectList(t: TenantTable, skipKey = false): string {
  const columns = t.columns
    .filter((c) => !(skipKey && t.key.includes(c.name)))
    .map((c) => (c.blob ? `hex(${c.name}) AS ${c.name}` : c.name));
  if (t.name === "chunks")
    columns.push(
      "(SELECT content FROM chunks_fts WHERE rowid = chunks.id)",
      "(SELECT context FROM chunks_fts WHERE rowid = chunks.id)",
    );
  return columns.join(", ");
}

/** `(k1, k2) > (?, ?)` and the like, with its parameters. */
function keyBound(t: TenantTable, op: ">" | "<=", key: unknown[] | null): { sql: string; params: unknown[] } {
  if (key === null || t.key.length === 0) return { sql: "", params: [] };
  const columns = t.key.length === 1 ? t.key[0]! : `(${t.key.join(", ")})`;
  const marks = t.key.length === 1 ? "?" : `(${t.key.map(() => "?").join(", ")})`;
  return { sql: ` AND ${columns} ${op} ${marks}`, params: key };
}

async function readRows(
  db: D1Database,
  t: TenantTable,
  tenantId: string,
  after: unknown[] | null,
  upTo: unknown[] | null,
  limit: number | null,
): Promise<unknown[][]> {
  const lower = keyBound(t, ">", after);
  const upper = keyBound(t, "<=", upTo);
  const order = t.key.length > 0 ? ` ORDER BY ${t.key.join(", ")}` : "";
  const sql = `SELECT ${selectList(t)} FROM ${t.name} WHERE tenant_id = ?${lower.sql}${upper.sql}${order}${limit === null ? "" : ` LIMIT ${limit}`}`;
  return db
    .prepare(sql)
    .bind(tenantId, ...lower.params, ...upper.params)
    .raw();
}

function keyOf(t: TenantTable, row: unknown[]): unknown[] {
  return t.key.map((name) => row[t.columns.findIndex((c) => c.name === name)]);
}

/**
 * One page of a keyed table: the source's next rows after `after`, and the target's rows in the same key range
 * (to the end of the table on the last page), made equal on the target. With tallies, both sides are counted
 * (the target as it is after the page's writes).
 */
export async function diffPage(
  source: D1Database,
  target: D1Database,
  t: TenantTable,
  tenantId: string,
  after: unknown[] | null,
  tallies?: { source: Tally; target: Tally },
): Promise<PageResult> {
  const limit = t.key.length === 0 ? null : (PAGE_ROWS[t.name] ?? DEFAULT_PAGE_ROWS);
  const rows = await readRows(source, t, tenantId, after, null, limit);
  const last = limit !== null && rows.length === limit ? keyOf(t, rows.at(-1)!) : null;
  const present = await readRows(target, t, tenantId, after, last, null);
  const theirs = new Map(present.map((row) => [JSON.stringify(keyOf(t, row)), JSON.stringify(row)]));
  const upserts: unknown[][] = [];
  for (const row of rows) {
    const key = JSON.stringify(keyOf(t, row));
    if (theirs.get(key) !== JSON.stringify(row)) upserts.push(row);
    theirs.delete(key);
  }
  const deletes = [...theirs.keys()].map((key) => JSON.parse(key) as unknown[]);
  if (upserts.length > 0 || deletes.length > 0) await writeDiff(target, t, tenantId, upserts, deletes);
  if (tallies) {
    for (const row of rows) tallyRow(tallies.source, JSON.stringify(row));
    const after_ =
      upserts.length > 0 || deletes.length > 0 ? await readRows(target, t, tenantId, after, last, null) : present;
    for (const row of after_) tallyRow(tallies.target, JSON.stringify(row));
  }
  return { rows: rows.length, changed: upserts.length + deletes.length, next: last };
}

/** The target's writes for a page, in one batch: deletions by key, then the rows (and chunks' keyword rows). */
async function writeDiff(
  target: D1Database,
  t: TenantTable,
  tenantId: string,
  upserts: unknown[][],
  deletes: unknown[][],
): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  // Keys compared as SQLite renders them on both sides: json_array(key columns) against each element of the list.
  const keyMatch = t.key.length === 0 ? "" : ` AND json_array(${t.key.join(", ")}) IN (SELECT value FROM json_each(?))`;
  const chunkId = t.columns.findIndex((c) => c.name === "id");
  if (t.name === "chunks") {
    // The keyword rows written and deleted here move the target's keyword write counter (write-counter.ts).
    const tokens = t.columns.findIndex((c) => c.name === "fts_tokens");
    const written = upserts.map((row) => ({ tokens: tokens < 0 ? null : Number(row[tokens] ?? 0) }));
    statements.push(countKeywordWrites(target, keywordWriteUnits(written) + deletes.length));
  }
  if (deletes.length > 0) {
    if (t.name === "chunks")
      statements.push(
        target
          .prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT value ->> ${t.key.indexOf("id")} FROM json_each(?))`)
          .bind(JSON.stringify(deletes)),
      );
    statements.push(
      target
        .prepare(`DELETE FROM ${t.name} WHERE tenant_id = ?${keyMatch}`)
        .bind(...(t.key.length === 0 ? [tenantId] : [tenantId, JSON.stringify(deletes)])),
    );
  }
  const names = t.columns.map((c) => c.name);
  const values = t.columns.map((c, i) => (c.blob ? `unhex(j.value ->> ${i})` : `j.value ->> ${i}`));
  for (const group of groups(upserts)) {
    const json = JSON.stringify(group);
    if (t.name === "chunks") {
      const fts = names.length;
      statements.push(
        target
          .prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT value ->> ${chunkId} FROM json_each(?))`)
          .bind(json),
        target
          .prepare(
            `INSERT INTO chunks_fts (rowid, content, context) SELECT j.value ->> ${chunkId}, j.value ->> ${fts}, j.value ->> ${fts + 1} FROM json_each(?) j WHERE j.value ->> ${fts} IS NOT NULL`,
          )
          .bind(json),
      );
    }
    statements.push(
      target
        .prepare(
          `INSERT OR REPLACE INTO ${t.name} (${names.join(", ")}) SELECT ${values.join(", ")} FROM json_each(?) j`,
        )
        .bind(json),
    );
  }
  await target.batch(statements);
}

/** Rows grouped under WRITE_CHARS of JSON each (a longer row stands alone). */
function groups(rows: unknown[][]): unknown[][][] {
  return boundedGroups(rows, { count: Infinity, size: WRITE_CHARS }, (row) => JSON.stringify(row).length + 1);
}

/**
 * One page of an append-only table (tool_calls): the source's rows after the one the target already holds,
 * in key order, written without their key. The target holds a prefix of the source's rows (the tenant is not
 * live there and the rows are only appended), so its count says where to go on, even after a crash.
 */
export async function appendPage(
  source: D1Database,
  target: D1Database,
  t: TenantTable,
  tenantId: string,
): Promise<{ rows: number; done: boolean }> {
  const key = t.key[0]!;
  const held = (await target
    .prepare(`SELECT COUNT(*) AS n FROM ${t.name} WHERE tenant_id = ?`)
    .bind(tenantId)
    .first<number>("n"))!;
  const from =
    held === 0
      ? null
      : await source
          .prepare(`SELECT ${key} AS k FROM ${t.name} WHERE tenant_id = ? ORDER BY ${key} LIMIT 1 OFFSET ?`)
          .bind(tenantId, held - 1)
          .first<unknown>("k");
  const limit = DEFAULT_PAGE_ROWS * 5;
  const rows = await source
    .prepare(
      `SELECT ${selectList(t, true)} FROM ${t.name} WHERE tenant_id = ?${from === null ? "" : ` AND ${key} > ?`} ORDER BY ${key} LIMIT ${limit}`,
    )
    .bind(...(from === null ? [tenantId] : [tenantId, from]))
    .raw();
  const names = t.columns.filter((c) => c.name !== key).map((c) => c.name);
  if (rows.length > 0) {
    await target.batch(
      groups(rows).map((group) =>
        target
          .prepare(
            `INSERT INTO ${t.name} (${names.join(", ")}) SELECT ${names.map((_, i) => `j.value ->> ${i}`).join(", ")} FROM json_each(?) j ORDER BY j.key`,
          )
          .bind(JSON.stringify(group)),
      ),
    );
  }
  return { rows: rows.length, done: rows.length < limit };
}

/** Where one side's tally of an append-only table has got: after the row keyed `after` (null: from the first; keys are never null). */
export interface TallyCursor {
  after: unknown;
  done: boolean;
}

export const TALLY_START: TallyCursor = { after: null, done: false };
/** Rows one tally page reads of a side: one query, so a long usage log is verified over many pages (and jobs). */
const TALLY_PAGE_ROWS = 1000;

/**
 * One page of one side's tally of an append-only table: up to TALLY_PAGE_ROWS rows after the cursor, counted and
 * checksummed in key order without the key (the target renumbered them). A page at a time, saved in the move's
 * progress between pages: tallying a long usage log in one go takes more queries than one invocation may run
 * (1,000 on the Paid plan, 50 on Free).
 */
export async function tallyAppendOnlyPage(
  db: D1Database,
  t: TenantTable,
  tenantId: string,
  tally: Tally,
  cursor: TallyCursor,
): Promise<TallyCursor> {
  if (cursor.done) return cursor;
  const key = t.key[0]!;
  const rows = await db
    .prepare(
      `SELECT ${key}, ${selectList(t, true)} FROM ${t.name} WHERE tenant_id = ?${cursor.after === null ? "" : ` AND ${key} > ?`} ORDER BY ${key} LIMIT ${TALLY_PAGE_ROWS}`,
    )
    .bind(...(cursor.after === null ? [tenantId] : [tenantId, cursor.after]))
    .raw();
  for (const row of rows) tallyRow(tally, JSON.stringify(row.slice(1)));
  return rows.length < TALLY_PAGE_ROWS ? { after: null, done: true } : { after: rows.at(-1)![0], done: false };
}

/** Rows of the tenant left in a table (the purge's end test and the move's total). */
export async function countRows(db: D1Database, t: TenantTable, tenantId: string): Promise<number> {
  return (await db
    .prepare(`SELECT COUNT(*) AS n FROM ${t.name} WHERE tenant_id = ?`)
    .bind(tenantId)
    .first<number>("n"))!;
}

/** Deletes up to `limit` of the tenant's rows of a table (a chunk's keyword row with it); returns how many. */
export async function purgePage(db: D1Database, t: TenantTable, tenantId: string, limit = 500): Promise<number> {
  const rowids = `SELECT rowid FROM ${t.name} WHERE tenant_id = ?1 LIMIT ${limit}`;
  const statements = [db.prepare(`DELETE FROM ${t.name} WHERE rowid IN (${rowids})`).bind(tenantId)];
  if (t.name === "chunks")
    statements.unshift(
      countKeywordWritesOf(db, `rowid IN (${rowids})`, tenantId),
      db
        .prepare(`DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE rowid IN (${rowids}))`)
        .bind(tenantId),
    );
  const results = await db.batch(statements);
  return results.at(-1)!.meta.changes;
}
