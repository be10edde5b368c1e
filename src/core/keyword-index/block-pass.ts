import { remainingQueries } from "../../db/invocation-queries";
import { type KeywordMarks, readKeywordMarks, writeKeywordMarks } from "../../db/pass-marks";
import { keywordCode } from "../../shared/fts-text";
import { type Flush, flushStatement, readPostings, writeBlocksStatements } from "./block-build";
import { BLOCK_SIZE, BLOCK_TERM_DF, FLUSHES_MAX, flushAt, LAST_CHUNK_ID, RANGE_END, termMatch } from "./blocks";
import { unkeyedTerms } from "./term-freqs";

/**
 * The minute pass over posting blocks (blocks.ts), on one shard. It follows the shard's new chunks by id (a cursor, the
 * keyword_block_scans row of tenant ''): each word a new chunk holds is looked at, and gets its first blocks once it is
 * in BLOCK_TERM_DF chunks, or a flush once its tail is long enough. Words of changed or deleted chunks
 * (keyword_block_changes) are built anew. A tenant the pass has not seen (one that held chunks before the blocks
 * existed, or that moved in) has its words built in term order, a step per pass. Each pass does a bounded share;
 * what it leaves waits for the next, and searches read the postings not yet in blocks from the index meanwhile.
 *
 * Like the other minute passes, it reads nothing while the keyword write counter is where it was when a pass last
 * left nothing due (write-counter.ts).
 */

/** New chunks a pass looks at, changed chunks it handles, words a first build takes a step. */
const NEW_CHUNKS = 400;
const CHANGES = 200;
const FIRST_TERMS = 100;
/** Postings the full builds of one pass read at most (one word past it still goes, so none waits for ever). */
const BUILD_POSTINGS = 60_000;
/**
 * Queries a tenant's share of a pass takes at most: its look, its builds' postings, then a batch of their blocks (the
 * deletion and up to four statements of blocks for BUILD_POSTINGS), the flushes and the records.
 */
const QUERIES_PER_TENANT = 9;

type Tenant = { code: string; avgdl: number };
type Work = { built: number; left: boolean; postings: number };

/** One pass over a shard; returns how many words it built or flushed. `known`: the shard's marks, where read. */
export async function refreshPostingBlocks(d1: D1Database, now: number, known?: KeywordMarks | null): Promise<number> {
  if (remainingQueries() < 4) return 0;
  const marks = known === undefined ? await readKeywordMarks(d1) : known;
  if (marks !== null && marks.written === marks.topsWritten) return 0;
  const [cursorRow, firsts] = await d1.batch([
    d1.prepare(
      `SELECT (SELECT through FROM keyword_block_scans WHERE tenant_id = '') AS cursor, ${LAST_CHUNK_ID} AS last`,
    ),
    d1.prepare(
      `SELECT k.tenant_id, k.chunks, k.tokens, s.term, s.tenant_id IS NULL AS unseen FROM keyword_stats k
       LEFT JOIN keyword_block_scans s ON s.tenant_id = k.tenant_id
       WHERE (s.tenant_id IS NULL OR s.term IS NOT NULL) AND k.chunks > 0 ORDER BY k.tenant_id`,
    ),
  ]);
  const { cursor, last } = cursorRow!.results[0] as { cursor: number | null; last: number };
  const work: Work = { built: 0, left: false, postings: 0 };
  if (cursor === null) {
    // The shard's first pass: every tenant holding chunks gets a first build, so later chunks are the cursor's.
    await d1
      .prepare(
        "INSERT OR IGNORE INTO keyword_block_scans (tenant_id, through, term, scanned_at) VALUES ('', ?, NULL, ?)",
      )
      .bind(last, now)
      .run();
  } else await followNewChunks(d1, cursor, now, work);
  if (!work.left) await handleChanges(d1, work);
  for (const row of firsts!.results as FirstRow[]) {
    if (work.left || remainingQueries() < QUERIES_PER_TENANT + 1) {
      work.left = true;
      break;
    }
    await firstBuildStep(d1, row, now, work);
  }
  // Everything is done as of the count read first (writes since then move it again).
  if (!work.left && marks !== null) await writeKeywordMarks(d1, { topsWritten: marks.written }).run();
  return work.built;
}

type FirstRow = { tenant_id: string; chunks: number; tokens: number; term: string | null; unseen: number };

function tenantOf(tenantId: string, chunks: number, tokens: number): Tenant {
  return { code: keywordCode(tenantId), avgdl: chunks > 0 && tokens > 0 ? tokens / chunks : 1 };
}

/** The stored terms a forward index holds (term-freqs.ts: " key key:1.5 "), in the tenant's term space. */
function termsOf(code: string, freqs: string | null): string[] {
  if (!freqs) return [];
  return freqs
    .trim()
    .split(" ")
    .filter(Boolean)
    .map((entry) => {
      const key = entry.slice(0, entry.lastIndexOf(":") > 0 ? entry.lastIndexOf(":") : entry.length);
      return code + (key === "~" ? "" : key);
    });
}

/** The key a stored term has in the forward index (term-freqs.ts, forwardKey): the term without the code. */
function keyOf(code: string, term: string): string {
  return term.slice(code.length) || "~";
}

/** The chunks after the shard's cursor, tenant by tenant: their words looked at, then the cursor moved past them. */
async function followNewChunks(d1: D1Database, cursor: number, now: number, work: Work): Promise<void> {
  const { results } = await d1
    .prepare(
      `SELECT c.id, c.tenant_id, c.term_freqs, k.chunks, k.tokens, s.term AS first_build, s.tenant_id IS NULL AS unseen
       FROM chunks c LEFT JOIN keyword_stats k ON k.tenant_id = c.tenant_id LEFT JOIN keyword_block_scans s ON s.tenant_id = c.tenant_id
       WHERE c.id > ?1 AND c.id <= ${RANGE_END} ORDER BY c.id LIMIT ?2`,
    )
    .bind(cursor, NEW_CHUNKS)
    .all<{
      id: number;
      tenant_id: string;
      term_freqs: string | null;
      chunks: number;
      tokens: number;
      first_build: string | null;
      unseen: number;
    }>();
  if (results.length === 0) return;
  const byTenant = new Map<string, { tenant: Tenant; terms: Set<string>; firstBuild: string | null }>();
  for (const chunk of results) {
    let entry = byTenant.get(chunk.tenant_id);
    if (!entry) {
      entry = {
        tenant: tenantOf(chunk.tenant_id, chunk.chunks, chunk.tokens),
        terms: new Set(),
        firstBuild: chunk.first_build,
      };
      byTenant.set(chunk.tenant_id, entry);
    }
    // A word a first build has yet to reach is built by it (an unseen tenant's first build has not begun).
    if (chunk.unseen === 1) continue;
    for (const term of termsOf(entry.tenant.code, chunk.term_freqs))
      if (entry.firstBuild === null || term <= entry.firstBuild) entry.terms.add(term);
  }
  for (const [tenantId, { tenant, terms }] of byTenant) {
    if (remainingQueries() < QUERIES_PER_TENANT + 2) {
      work.left = true;
      return;
    }
    await lookAtWords(d1, tenantId, tenant, [...terms], work, []);
    if (work.left) return;
  }
  await d1
    .prepare("UPDATE keyword_block_scans SET through = ?, scanned_at = ? WHERE tenant_id = ''")
    .bind(results.at(-1)!.id, now)
    .run();
  if (results.length === NEW_CHUNKS) work.left = true;
}

/** What the pass needs of a word: where its blocks end, how many there are, its tail and its chunk count. */
type WordState = {
  term: string;
  through: number | null;
  top: number | null;
  bottom: number | null;
  df: number | null;
  tail: number | null;
};

/**
 * Looks at a tenant's words and writes what they are due: a first build, a flush or a full build. `rebuild`: words to
 * build anew whatever they hold (their chunks changed). `after`: statements that go in the same batch (records of what
 * is done), left out where the pass's budget left some word for later.
 */
async function lookAtWords(
  d1: D1Database,
  tenantId: string,
  tenant: Tenant,
  terms: string[],
  work: Work,
  records: D1PreparedStatement[],
  rebuild = new Set<string>(),
): Promise<void> {
  let after = records;
  const states = terms.length === 0 ? [] : await wordStates(d1, tenantId, terms);
  const builds: string[] = [];
  const flushes: Flush[] = [];
  for (const s of states) {
    const blocks = s.top !== null;
    if (rebuild.has(s.term) ? blocks || (s.df ?? 0) >= BLOCK_TERM_DF : !blocks && (s.df ?? 0) >= BLOCK_TERM_DF) {
      if (work.postings > 0 && work.postings + (s.df ?? 0) > BUILD_POSTINGS) {
        work.left = true;
        after = [];
        continue;
      }
      work.postings += s.df ?? 0;
      builds.push(s.term);
    } else if (blocks && s.tail !== null && s.tail >= flushAt(s.top! + 1)) {
      const match = termMatch(s.term);
      const bottom = Math.min(s.bottom!, 0);
      // A tail longer than a block (the pass fell behind) is built in full: one flush's row is one value.
      if (match === null || -bottom >= FLUSHES_MAX || s.tail > BLOCK_SIZE) {
        work.postings += s.df ?? 0;
        builds.push(s.term);
      } else
        flushes.push({ term: s.term, match, key: keyOf(tenant.code, s.term), block: bottom - 1, through: s.through! });
    }
  }
  const built = builds.length > 0 ? await readPostings(d1, tenantId, builds, (term) => keyOf(tenant.code, term)) : null;
  const statements = [
    ...(built ? writeBlocksStatements(d1, tenantId, builds, built, tenant.avgdl) : []),
    ...(flushes.length > 0 ? [flushStatement(d1, tenantId, flushes, tenant.avgdl)] : []),
    ...after,
  ];
  if (statements.length > 0) await d1.batch(statements);
  work.built += builds.length + flushes.length;
}

/** The words' states in one statement: their blocks' ends (two seeks), their chunk count, and their tail. */
async function wordStates(d1: D1Database, tenantId: string, terms: string[]): Promise<WordState[]> {
  const json = JSON.stringify(terms.map((term) => [term, termMatch(term)]));
  const { results } = await d1
    .prepare(
      `WITH w(term, match) AS (SELECT j.value ->> 0, j.value ->> 1 FROM json_each(?2) j),
       s AS MATERIALIZED (
         SELECT w.term, w.match,
           (SELECT MAX(block) FROM keyword_blocks b WHERE b.tenant_id = ?1 AND b.term = w.term) AS top,
           (SELECT MIN(block) FROM keyword_blocks b WHERE b.tenant_id = ?1 AND b.term = w.term) AS bottom,
           (SELECT doc FROM chunks_fts_row r WHERE r.term = w.term) AS df
         FROM w
       ),
       t AS MATERIALIZED (
         SELECT s.*, (SELECT MAX(through) FROM keyword_blocks b WHERE b.tenant_id = ?1 AND b.term = s.term AND b.block = MIN(s.bottom, 0)) AS through
         FROM s
       )
       SELECT term, through, top, bottom, df,
         CASE WHEN through IS NULL THEN NULL
              WHEN match IS NULL THEN (SELECT COUNT(DISTINCT v.doc) FROM chunks_fts_instance v WHERE v.term = t.term AND v.doc > t.through AND v.doc <= ${RANGE_END})
              ELSE (SELECT COUNT(*) FROM chunks_fts x WHERE x.chunks_fts MATCH t.match AND x.rowid > t.through AND x.rowid <= ${RANGE_END}) END AS tail
       FROM t`,
    )
    .bind(tenantId, json)
    .all<WordState>();
  return results;
}

/** Chunks changed or deleted since their words' blocks were built: those words are built anew, and the records go. */
async function handleChanges(d1: D1Database, work: Work): Promise<void> {
  const { results } = await d1
    .prepare(
      `SELECT g.id, g.tenant_id, g.term_freqs AS before, c.term_freqs AS now, k.chunks, k.tokens
       FROM keyword_block_changes g LEFT JOIN chunks c ON c.id = g.chunk_id LEFT JOIN keyword_stats k ON k.tenant_id = g.tenant_id
       ORDER BY g.id LIMIT ?`,
    )
    .bind(CHANGES)
    .all<{
      id: number;
      tenant_id: string;
      before: string | null;
      now: string | null;
      chunks: number | null;
      tokens: number | null;
    }>();
  const byTenant = new Map<string, { tenant: Tenant; terms: Set<string>; ids: number[] }>();
  for (const change of results) {
    let entry = byTenant.get(change.tenant_id);
    if (!entry) {
      entry = { tenant: tenantOf(change.tenant_id, change.chunks ?? 0, change.tokens ?? 0), terms: new Set(), ids: [] };
      byTenant.set(change.tenant_id, entry);
    }
    for (const term of [...termsOf(entry.tenant.code, change.before), ...termsOf(entry.tenant.code, change.now)])
      entry.terms.add(term);
    entry.ids.push(change.id);
  }
  for (const [tenantId, { tenant, terms, ids }] of byTenant) {
    if (work.left || remainingQueries() < QUERIES_PER_TENANT + 2) {
      work.left = true;
      return;
    }
    const done = d1
      .prepare("DELETE FROM keyword_block_changes WHERE id IN (SELECT value FROM json_each(?))")
      .bind(JSON.stringify(ids));
    // The records go only in the batch of every build they call for.
    await lookAtWords(d1, tenantId, tenant, [...terms], work, [done], terms);
  }
  if (results.length === CHANGES) work.left = true;
}

/** The next step of a tenant's first build: its next FIRST_TERMS words in term order that are in enough chunks. */
async function firstBuildStep(d1: D1Database, row: FirstRow, now: number, work: Work): Promise<void> {
  const tenant = tenantOf(row.tenant_id, row.chunks, row.tokens);
  const from = row.term ?? tenant.code;
  const end = tenant.code.slice(0, -1) + String.fromCharCode(tenant.code.charCodeAt(tenant.code.length - 1) + 1);
  const { results } = await d1
    .prepare(
      `SELECT term, doc FROM chunks_fts_row WHERE term ${row.term === null ? ">=" : ">"} ?1 AND term < ?2 AND doc >= ?3 ORDER BY term LIMIT ?4`,
    )
    .bind(from, end, BLOCK_TERM_DF, FIRST_TERMS)
    .all<{ term: string; doc: number }>();
  // Words the forward index leaves out (those that stem like a stopword) get none: search never reads them by blocks.
  const unkeyed = new Set(unkeyedTerms(tenant.code));
  const terms: string[] = [];
  let last: string | null = null;
  for (const r of results) {
    if (terms.length > 0 && work.postings + r.doc > BUILD_POSTINGS) break;
    last = r.term;
    if (unkeyed.has(r.term)) continue;
    work.postings += r.doc;
    terms.push(r.term);
  }
  const done = results.length < FIRST_TERMS && (results.length === 0 || last === results.at(-1)!.term);
  const record = d1
    .prepare(
      `INSERT INTO keyword_block_scans (tenant_id, through, term, scanned_at) VALUES (?1, 0, ?2, ?3)
       ON CONFLICT (tenant_id) DO UPDATE SET term = excluded.term, scanned_at = excluded.scanned_at`,
    )
    .bind(row.tenant_id, done ? null : (last ?? row.term ?? tenant.code), now);
  const built =
    terms.length > 0 ? await readPostings(d1, row.tenant_id, terms, (term) => keyOf(tenant.code, term)) : null;
  await d1.batch([...(built ? writeBlocksStatements(d1, row.tenant_id, terms, built, tenant.avgdl) : []), record]);
  work.built += terms.length;
  if (!done) work.left = true;
}

/**
 * For an operator (tenant stats, read in its batch): the words with posting blocks, and what the pass has yet to do for
 * the tenant (its first build, changed chunks, the shard's new chunks), or null before it first looked at a tenant
 * holding chunks; read with `blocksReport`.
 */
export function blocksReportStatement(d1: D1Database, tenantId: string): D1PreparedStatement {
  return d1
    .prepare(
      `SELECT (SELECT COUNT(*) FROM keyword_blocks WHERE tenant_id = ?1 AND block = 0) AS words,
              COALESCE(k.chunks, 0) > 0 AS held, s.tenant_id IS NOT NULL AS seen,
              (s.term IS NOT NULL) + (SELECT COUNT(*) FROM keyword_block_changes WHERE tenant_id = ?1)
                + (COALESCE((SELECT through FROM keyword_block_scans WHERE tenant_id = ''), -1) < ${LAST_CHUNK_ID}) AS due
       FROM (SELECT 1) LEFT JOIN keyword_stats k ON k.tenant_id = ?1 LEFT JOIN keyword_block_scans s ON s.tenant_id = ?1`,
    )
    .bind(tenantId);
}

export type BlocksReportRow = { words: number; held: number; seen: number; due: number };

export function blocksReport(row: BlocksReportRow | undefined): { words: number; due: number | null } {
  if (!row) return { words: 0, due: 0 };
  return { words: row.words, due: row.held === 1 && row.seen === 0 ? null : row.held === 1 ? row.due : 0 };
}
