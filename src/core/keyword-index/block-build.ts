import { BLOCK_SIZE, type BlockEntry, LAST_CHUNK_ID, RANGE_END, termMatch } from "./blocks";
import { columnWeight, saturated, saturatedSql } from "./bm25";
import { forwardFreqSql } from "./term-freqs";

/**
 * The statements that write posting blocks (blocks.ts), each for many words at once: the minute pass decides which
 * (block-pass.ts). Every statement names the tenant; entries are JSON [chunk id, frequency, length, project].
 */

/**
 * Words' blocks anew from the index: their postings read (`readPostings`), ordered by impact and cut into blocks here,
 * then written in one batch with the deletion of their old rows (a transaction: a search sees the old blocks or the
 * new). A word whose MATCH is exact (termMatch) is read by MATCH, its frequencies from the chunks' forward index;
 * another through chunks_fts_instance, summed per chunk, which reads each occurrence and sums them. The blocks are cut
 * here, not in SQL: a window over the postings and a group per block read every posting again, several times
 * (docs/benchmarks.md, posting blocks).
 */
export interface Built {
  /** The shard's last chunk id when the postings were read: the blocks' `through`. */
  through: number;
  /** By word, its postings. */
  postings: Map<string, BlockEntry[]>;
}

/** The postings of words to build anew, a row each (a word's as one value could pass D1's 2 MB a value). */
export async function readPostings(
  d1: D1Database,
  tenantId: string,
  terms: string[],
  key: (term: string) => string,
): Promise<Built> {
  const json = JSON.stringify(terms.map((term) => [term, termMatch(term), key(term)]));
  const { results } = await d1
    .prepare(
      `WITH w(term, match, bare, tagged) AS MATERIALIZED (
         SELECT j.value ->> 0, j.value ->> 1, ' ' || (j.value ->> 2) || ' ', ' ' || (j.value ->> 2) || ':' FROM json_each(?2) j
       )
       SELECT term, doc, f, len, project FROM (
         SELECT q.term, c.id AS doc, COALESCE(q.f, ${forwardFreqSql("c.term_freqs", "q.bare", "q.tagged")}) AS f,
                c.fts_tokens AS len, c.project
         FROM (
           SELECT w.term, x.rowid AS doc, NULL AS f, w.bare, w.tagged FROM w CROSS JOIN chunks_fts x
           WHERE w.match IS NOT NULL AND x.chunks_fts MATCH w.match
           UNION ALL
           SELECT w.term, v.doc, SUM(${columnWeight}), NULL, NULL FROM w CROSS JOIN chunks_fts_instance v
           WHERE w.match IS NULL AND v.term = w.term GROUP BY w.term, v.doc
         ) q CROSS JOIN chunks c
         WHERE c.id = q.doc AND c.tenant_id = ?1
       )
       WHERE f IS NOT NULL
       UNION ALL
       SELECT NULL, ${LAST_CHUNK_ID}, NULL, NULL, NULL`,
    )
    .bind(tenantId, json)
    .all<{ term: string | null; doc: number; f: number; len: number | null; project: string | null }>();
  const postings = new Map<string, BlockEntry[]>();
  let through = 0;
  for (const r of results) {
    if (r.term === null) through = r.doc;
    else {
      let list = postings.get(r.term);
      if (!list) postings.set(r.term, (list = []));
      list.push([r.doc, r.f, r.len, r.project]);
    }
  }
  return { through, postings };
}

/**
 * The statements that replace the words' blocks with those of their postings as read: best first by impact at
 * `avgdl`, BLOCK_SIZE a block, each with its highest impact (a hair above, so that a bound read back from JSON never
 * falls under an entry). A word with no postings is left with none.
 */
export function writeBlocksStatements(
  d1: D1Database,
  tenantId: string,
  terms: string[],
  built: Built,
  avgdl: number,
): D1PreparedStatement[] {
  const rows: [string, number, number, string][] = [];
  for (const term of terms) {
    const impact = ([, f, len]: BlockEntry) => saturated(f, len ?? avgdl, avgdl);
    const sorted = (built.postings.get(term) ?? [])
      .map((entry) => ({ entry, impact: impact(entry) }))
      .sort((a, b) => b.impact - a.impact || a.entry[0] - b.entry[0]);
    for (let block = 0; block * BLOCK_SIZE < sorted.length; block++) {
      const part = sorted.slice(block * BLOCK_SIZE, (block + 1) * BLOCK_SIZE);
      rows.push([term, block, part[0]!.impact * (1 + 1e-12), JSON.stringify(part.map((p) => p.entry))]);
    }
  }
  // The rows go in statements of at most WRITE_CHARS of JSON each (D1 binds 2 MB a value at most).
  const groups: string[][] = [[]];
  let chars = 0;
  for (const row of rows.map((r) => JSON.stringify(r))) {
    if (groups.at(-1)!.length > 0 && chars + row.length > WRITE_CHARS) {
      groups.push([]);
      chars = 0;
    }
    groups.at(-1)!.push(row);
    chars += row.length + 1;
  }
  return [
    d1
      .prepare("DELETE FROM keyword_blocks WHERE tenant_id = ?1 AND term IN (SELECT value FROM json_each(?2))")
      .bind(tenantId, JSON.stringify(terms)),
    ...groups
      .filter((g) => g.length > 0)
      .map((g) => `[${g.join(",")}]`)
      .map((json) =>
        d1
          .prepare(
            `INSERT INTO keyword_blocks (tenant_id, term, block, max_impact, avgdl, through, entries)
           SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, ?3, ?4, j.value ->> 3 FROM json_each(?2) j`,
          )
          .bind(tenantId, json, avgdl, built.through),
      ),
  ];
}

/** JSON characters a statement of blocks binds at most (D1's limit is 2,000,000 bytes a value; entries are ASCII or near). */
const WRITE_CHARS = 1_000_000;

/** A word's flush: its tail as block `block` (the next below its last), read by MATCH from `through` on. */
export interface Flush {
  term: string;
  match: string;
  /** The word's key in the chunks' forward index (term-freqs.ts), which gives each tail chunk's frequency. */
  key: string;
  block: number;
  through: number;
}

/** The flushes' blocks, one statement for them all: each word's postings after its `through`, in the shard's range. */
export function flushStatement(d1: D1Database, tenantId: string, flushes: Flush[], avgdl: number): D1PreparedStatement {
  const json = JSON.stringify(flushes.map((f) => [f.term, f.match, f.block, f.through, f.key]));
  return d1
    .prepare(
      `INSERT INTO keyword_blocks (tenant_id, term, block, max_impact, avgdl, through, entries)
       SELECT ?1, term, block, MAX(${saturatedSql("f", "len", "?3")}), ?3, ${LAST_CHUNK_ID}, json_group_array(json_array(doc, f, len, project))
       FROM (
         SELECT t.term, t.block, c.id AS doc, ${forwardFreqSql("c.term_freqs", "t.bare", "t.tagged")} AS f, c.fts_tokens AS len, c.project
         FROM (SELECT j.value ->> 0 AS term, j.value ->> 1 AS match, j.value ->> 2 AS block, j.value ->> 3 AS through,
                      ' ' || (j.value ->> 4) || ' ' AS bare, ' ' || (j.value ->> 4) || ':' AS tagged FROM json_each(?2) j) t
         CROSS JOIN chunks_fts x CROSS JOIN chunks c
         WHERE x.chunks_fts MATCH t.match AND x.rowid > t.through AND x.rowid <= ${RANGE_END} AND c.id = x.rowid AND c.tenant_id = ?1
       )
       WHERE f IS NOT NULL
       GROUP BY term, block`,
    )
    .bind(tenantId, json, avgdl);
}

/** Everything the pass keeps for a tenant: blocks, pending changes, and the record of its first build. */
export function forgetBlocksStatements(d1: D1Database, tenantId: string): D1PreparedStatement[] {
  return ["keyword_blocks", "keyword_block_changes", "keyword_block_scans"].map((table) =>
    d1.prepare(`DELETE FROM ${table} WHERE tenant_id = ?`).bind(tenantId),
  );
}

/**
 * Records the chunks that `chunksWhere` (SQL over `chunks`, with `binds`) selects as changed, with their forward index
 * as it is: run it in the batch that rewrites or deletes their keyword rows, before those statements. Nothing is
 * written for a tenant with no blocks (its searches read every posting).
 */
export function recordBlockChanges(d1: D1Database, chunksWhere: string, ...binds: unknown[]): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO keyword_block_changes (tenant_id, chunk_id, term_freqs)
       SELECT tenant_id, id, term_freqs FROM chunks
       WHERE ${chunksWhere} AND EXISTS (SELECT 1 FROM keyword_blocks b WHERE b.tenant_id = chunks.tenant_id)`,
    )
    .bind(...binds);
}
