import { remainingQueries } from "../../db/invocation-queries";
import { type KeywordMarks, readKeywordMarks, writeKeywordMarks } from "../../db/pass-marks";
import { keywordCode } from "../../shared/fts-text";
import { columnWeight, saturatedSql } from "./bm25";
import { unkeyedTerms } from "./term-freqs";

/**
 * Top postings: for a word in more than TOP_TERM_DF of a tenant's chunks, the TOP_POSTINGS chunks where it weighs
 * most (its BM25 part, length-normalized, when the list was built), kept in keyword_tops.
 *
 * BM25 reads every posting of every query word, and a common word's list grows with the tenant: in a large tenant a
 * query's words hold thousands of postings, and reading them is most of a search's D1 time. With top
 * postings, a search reads a common word's list only as far as its top chunks (plus the chunks written since the
 * list was built), reads the rarer words' postings in full, and scores every chunk so found exactly, the common
 * words from each chunk's forward index (term-freqs.ts): scores.ts, `tops`. What it gives up is a chunk
 * that holds none of the rarer words and is in no common word's top list, and such a chunk is rarely among the top
 * hits (docs/benchmarks.md, keyword index). A search limited to projects reads a list only where TOP_COVERED of its chunks are theirs
 * (keyword_top_terms.projects).
 *
 * The minute pass builds and renews the lists (`refreshTopPostings`): a word gets one when it passes TOP_TERM_DF
 * chunks, and a new one when its chunk count has moved by TOP_POSTINGS / 2 since: chunks written since a list are
 * read at search time by chunk id (through), so that part stays short, and a deleted chunk's row, which search
 * skips (it joins the chunks), is gone at the next build.
 */

export const TOP_TERM_DF = 1_000;
export const TOP_POSTINGS = 300;
/**
 * A search limited to projects reads a word's list only where this many of its chunks are in those projects: the
 * list's chunks in a project are that project's best for the word, as many as there are (so a list mostly of other
 * projects' chunks would leave the project with too few).
 */
export const TOP_COVERED = 240;
/** Words whose lists one pass builds at most, on each shard (each is one batch reading the word's postings). */
export const TOP_TERMS_PER_PASS = 40;
/**
 * Words in more of a large tenant's chunks than this have their count kept (keyword_dfs) by the pass's look: a rarer
 * word's count costs search little to read from the index (it has few postings to count).
 */
export const DF_KEPT = 200;
/** Queries a list's build takes: its batch of three statements (a list dropped takes two). */
const QUERIES_PER_BUILD = 3;
/** Queries a look at a tenant takes: its counts replaced and its due words read (one batch), and the record of the look. */
const QUERIES_PER_LOOK = 4;
/** Queries a pass takes besides its looks: the write counter, the tenants due, and the record of a pass that left none. */
const QUERIES_PER_PASS = 3;

/**
 * Builds the top postings that are due on one shard, as many as `maxTerms` and the invocation's D1 queries allow;
 * returns how many words it built or dropped. Looking at a tenant reads its vocabulary's counts, a scan of all its
 * postings, and keeps its common words' counts (keyword_dfs), which search reads instead of counting postings; so a
 * tenant is looked at only while it is over TOP_TERM_DF chunks and its statistics have moved since the last look or
 * that look left words due (keyword_top_scans). A tenant that fell back under TOP_TERM_DF chunks loses its lists and
 * counts, and its searches read every posting again.
 *
 * Finding those tenants reads every tenant's statistics, so it is skipped while the keyword write counter
 * (write-counter.ts: every write that moves a tenant's statistics moves it) is where it was when a pass last left
 * nothing due: a pass over a shard at rest reads the counter's row, or nothing where `marks` were read for it (null: a
 * shard that keeps no count, looked at every time).
 */
export async function refreshTopPostings(
  d1: D1Database,
  now: number,
  maxTerms = TOP_TERMS_PER_PASS,
  known?: KeywordMarks | null,
): Promise<number> {
  if (remainingQueries() < QUERIES_PER_PASS) return 0;
  const marks = known === undefined ? await readKeywordMarks(d1) : known;
  if (marks !== null && marks.written === marks.topsWritten) return 0;
  const { results: tenants } = await d1
    .prepare(
      `SELECT k.tenant_id, k.chunks, k.tokens FROM keyword_stats k LEFT JOIN keyword_top_scans s ON s.tenant_id = k.tenant_id
       WHERE (k.chunks > ?1 AND (s.tenant_id IS NULL OR s.due > 0 OR s.chunks <> k.chunks OR s.tokens <> k.tokens))
          OR (k.chunks <= ?1 AND s.tenant_id IS NOT NULL)
       ORDER BY k.tenant_id`,
    )
    .bind(TOP_TERM_DF)
    .all<{ tenant_id: string; chunks: number; tokens: number }>();
  let built = 0;
  let left = false;
  for (const tenant of tenants) {
    if (built >= maxTerms || remainingQueries() < QUERIES_PER_LOOK + QUERIES_PER_BUILD + 1) {
      left = true;
      break;
    }
    if (tenant.chunks <= TOP_TERM_DF) {
      await d1.batch(forgetStatements(d1, tenant.tenant_id));
      continue;
    }
    const looked = await d1.batch([...countStatements(d1, tenant.tenant_id), dueWords(d1, tenant.tenant_id)]);
    const due = looked.at(-1)!.results as { term: string; df: number | null }[];
    const avgdl = tenant.chunks > 0 && tenant.tokens > 0 ? tenant.tokens / tenant.chunks : 1;
    // As many of its due words as the pass and the invocation's queries allow (one left for the record of the look,
    // one for the pass's), in one batch with the record of this look.
    const words = due.slice(
      0,
      Math.max(0, Math.min(maxTerms - built, Math.floor((remainingQueries() - 2) / QUERIES_PER_BUILD))),
    );
    await d1.batch([
      ...words.flatMap(({ term, df }) =>
        df === null
          ? dropStatements(d1, tenant.tenant_id, term)
          : buildStatements(d1, tenant.tenant_id, term, avgdl, now),
      ),
      d1
        .prepare(
          `INSERT INTO keyword_top_scans (tenant_id, chunks, tokens, due, scanned_at) VALUES (?1, ?2, ?3, ?4, ?5)
           ON CONFLICT (tenant_id) DO UPDATE SET chunks = excluded.chunks, tokens = excluded.tokens, due = excluded.due, scanned_at = excluded.scanned_at`,
        )
        .bind(tenant.tenant_id, tenant.chunks, tenant.tokens, due.length - words.length, now),
    ]);
    built += words.length;
    if (words.length < due.length) left = true;
  }
  // Everything is done as of the count read first (writes since then move it again).
  if (!left && marks !== null) await writeKeywordMarks(d1, { topsWritten: marks.written }).run();
  return built;
}

/**
 * The tenant's words (its code's range of chunks_fts_row) in more than DF_KEPT chunks, with their counts: only the
 * counts that moved are written, and only the words that fell to DF_KEPT or under are deleted (D1 bills every row a
 * statement writes: rewriting a large tenant's thousands of counts at each look cost more than all its writes).
 */
function countStatements(d1: D1Database, tenantId: string): D1PreparedStatement[] {
  const code = keywordCode(tenantId);
  return [
    d1
      .prepare(
        `INSERT INTO keyword_dfs (tenant_id, term, df) SELECT ?1, term, doc FROM chunks_fts_row WHERE term >= ?2 AND term < ?3 AND doc > ?4
         ON CONFLICT (tenant_id, term) DO UPDATE SET df = excluded.df WHERE df <> excluded.df`,
      )
      .bind(tenantId, code, `${code}~`, DF_KEPT),
    d1
      .prepare(
        `DELETE FROM keyword_dfs WHERE tenant_id = ?1
           AND NOT EXISTS (SELECT 1 FROM chunks_fts_row r WHERE r.term = keyword_dfs.term AND r.doc > ?2)`,
      )
      .bind(tenantId, DF_KEPT),
  ];
}

/**
 * The tenant's words, from the counts just kept, that passed the threshold without a list, or whose list is stale,
 * commonest first; not those the forward index leaves out (stopwords), which search never reads by a list. Then, with
 * a null count, the words with a list that are now in DF_KEPT chunks or fewer: their lists are dropped.
 */
function dueWords(d1: D1Database, tenantId: string): D1PreparedStatement {
  return d1
    .prepare(
      `SELECT term, df FROM (
         SELECT d.term, d.df FROM keyword_dfs d LEFT JOIN keyword_top_terms k ON k.tenant_id = d.tenant_id AND k.term = d.term
         WHERE d.tenant_id = ?1 AND ((k.term IS NULL AND d.df > ?2) OR ABS(d.df - k.df) > ?3 OR (k.term IS NOT NULL AND k.projects IS NULL)) AND d.term NOT IN (SELECT value FROM json_each(?4))
         UNION ALL
         SELECT k.term, NULL FROM keyword_top_terms k
         WHERE k.tenant_id = ?1 AND NOT EXISTS (SELECT 1 FROM keyword_dfs d WHERE d.tenant_id = ?1 AND d.term = k.term))
       ORDER BY df DESC NULLS LAST`,
    )
    .bind(tenantId, TOP_TERM_DF, TOP_POSTINGS / 2, JSON.stringify(unkeyedTerms(keywordCode(tenantId))));
}

/** A word's list, gone. */
function dropStatements(d1: D1Database, tenantId: string, term: string): D1PreparedStatement[] {
  return [
    d1.prepare("DELETE FROM keyword_tops WHERE tenant_id = ? AND term = ?").bind(tenantId, term),
    d1.prepare("DELETE FROM keyword_top_terms WHERE tenant_id = ? AND term = ?").bind(tenantId, term),
  ];
}

/** Everything the passes derived for a tenant: lists, counts and the record of the looks. */
export function forgetStatements(d1: D1Database, tenantId: string): D1PreparedStatement[] {
  return ["keyword_tops", "keyword_top_terms", "keyword_dfs", "keyword_top_scans"].map((table) =>
    d1.prepare(`DELETE FROM ${table} WHERE tenant_id = ?`).bind(tenantId),
  );
}

/**
 * For an operator (tenant stats, read in its batch): the words with top postings, and those the minute pass's last
 * look left due, or null where the tenant's words changed since that look (the next pass looks again); read with
 * `topPostingsReport`.
 */
export function topPostingsStatement(d1: D1Database, tenantId: string): D1PreparedStatement {
  return d1
    .prepare(
      `SELECT (SELECT COUNT(*) FROM keyword_top_terms WHERE tenant_id = ?1) AS words, k.chunks > ?2 AS large,
              CASE WHEN s.chunks = k.chunks AND s.tokens = k.tokens THEN s.due END AS due
       FROM (SELECT 1) LEFT JOIN keyword_stats k ON k.tenant_id = ?1 LEFT JOIN keyword_top_scans s ON s.tenant_id = ?1`,
    )
    .bind(tenantId, TOP_TERM_DF);
}

export type TopPostingsRow = { words: number; large: number | null; due: number | null };

/** A tenant too small for top postings has none due. */
export function topPostingsReport(row: TopPostingsRow | undefined): { words: number; due: number | null } {
  return { words: row?.words ?? 0, due: row?.large ? row.due : 0 };
}

/**
 * The last chunk id the shard gave out: chunks written later have higher ids (its counter, shard_identity), even
 * where chunks moved in from another shard's range hold higher ones.
 */
const LAST_CHUNK_ID =
  "COALESCE((SELECT next_chunk_id - 1 FROM shard_identity WHERE id = 1), (SELECT MAX(id) FROM chunks), 0)";

/**
 * One word's list, anew, in one batch (a transaction: `through` and the list see the same chunks). Only what changed is
 * written: the chunks that left the list are deleted and those that entered it inserted, while a chunk that stays
 * keeps its row (its impact as of the build that added it: the list chooses chunks, search scores them exactly).
 * Rewriting all TOP_POSTINGS rows at each renewal was most of what a large tenant's writes cost.
 */
function buildStatements(
  d1: D1Database,
  tenantId: string,
  term: string,
  avgdl: number,
  now: number,
): D1PreparedStatement[] {
  const f = `SUM(${columnWeight})`;
  const top = `SELECT doc, impact FROM (
           SELECT v.doc AS doc, ${saturatedSql(f, "c.fts_tokens", "?3")} AS impact
           FROM chunks_fts_instance v CROSS JOIN chunks c INDEXED BY chunks_postings
           WHERE v.term = ?2 AND c.id = v.doc AND c.tenant_id = ?1 GROUP BY v.doc)
         ORDER BY impact DESC, doc LIMIT ?4`;
  return [
    d1
      .prepare(
        `DELETE FROM keyword_tops WHERE tenant_id = ?1 AND term = ?2 AND chunk_id NOT IN (SELECT doc FROM (${top}))`,
      )
      .bind(tenantId, term, avgdl, TOP_POSTINGS),
    d1
      .prepare(
        `INSERT INTO keyword_tops (tenant_id, term, chunk_id, impact) SELECT ?1, ?2, doc, impact FROM (${top}) WHERE true
         ON CONFLICT (tenant_id, term, chunk_id) DO NOTHING`,
      )
      .bind(tenantId, term, avgdl, TOP_POSTINGS),
    d1
      .prepare(
        `INSERT INTO keyword_top_terms (tenant_id, term, df, through, built_at, projects)
         VALUES (?1, ?2, COALESCE((SELECT df FROM keyword_dfs WHERE tenant_id = ?1 AND term = ?2), 0), ${LAST_CHUNK_ID}, ?3,
           (SELECT json_group_object(project, n) FROM (
              SELECT COALESCE(c.project, '') AS project, COUNT(*) AS n FROM keyword_tops o CROSS JOIN chunks c INDEXED BY chunks_postings
              WHERE o.tenant_id = ?1 AND o.term = ?2 AND c.id = o.chunk_id GROUP BY 1)))
         ON CONFLICT (tenant_id, term) DO UPDATE SET df = excluded.df, through = excluded.through, built_at = excluded.built_at, projects = excluded.projects`,
      )
      .bind(tenantId, term, now),
  ];
}

/**
 * What this isolate last saw of a tenant's keyword index, per set of projects searched (every keyword statement says:
 * lists.ts): whether top postings serve such a search. The statement that reads them costs more to prepare and
 * run, so a search they do not serve gets the plain one. A search first seen gets the plain statement, which is exact
 * either way.
 */
const seen = new Map<string, boolean>();
const SEEN_MAX = 10_000;

function seenKey(tenantId: string, projects: readonly string[] | null): string {
  return projects === null ? tenantId : `${tenantId}\u0000${[...projects].sort().join("\u0000")}`;
}

export function hasTopPostings(tenantId: string, projects: readonly string[] | null): boolean {
  return seen.get(seenKey(tenantId, projects)) ?? false;
}

export function noteKeywordIndex(tenantId: string, projects: readonly string[] | null, tops: boolean): void {
  const key = seenKey(tenantId, projects);
  if (seen.get(key) === tops) return;
  if (seen.size >= SEEN_MAX) seen.clear();
  seen.set(key, tops);
}
