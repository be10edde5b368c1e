import { BLOCK_SIZE, LAST_CHUNK_ID, RANGE_END } from "./blocks";
import { columnWeight, saturatedSql } from "./bm25";
import { forwardFreqSql } from "./term-freqs";

/**
 * The statements that write posting blocks (blocks.ts), each for many words at once: the minute pass decides which
 * (block-pass.ts). Every statement names the tenant; entries are JSON [chunk id, frequency, length, project].
 */

/**
 * Words' blocks anew from the index, in one batch with the deletion of their old rows (a transaction: a search sees
 * the old blocks or the new). A word no chunk holds any more is left with none. `avgdl`: the tenant's now.
 */
export function fullBuildStatements(
  d1: D1Database,
  tenantId: string,
  terms: string[],
  avgdl: number,
): D1PreparedStatement[] {
  const json = JSON.stringify(terms);
  const impact = saturatedSql("p.f", "c.fts_tokens", "?3");
  return [
    d1
      .prepare("DELETE FROM keyword_blocks WHERE tenant_id = ?1 AND term IN (SELECT value FROM json_each(?2))")
      .bind(tenantId, json),
    d1
      .prepare(
        `INSERT INTO keyword_blocks (tenant_id, term, block, max_impact, avgdl, through, entries)
         SELECT ?1, term, (rank - 1) / ${BLOCK_SIZE}, MAX(impact), ?3, ${LAST_CHUNK_ID}, json_group_array(json_array(doc, f, len, project))
         FROM (
           SELECT p.term, p.doc, p.f, c.fts_tokens AS len, c.project, ${impact} AS impact,
                  ROW_NUMBER() OVER (PARTITION BY p.term ORDER BY ${impact} DESC, p.doc) AS rank
           FROM (
             SELECT j.value AS term, v.doc, SUM(${columnWeight}) AS f
             FROM json_each(?2) j CROSS JOIN chunks_fts_instance v WHERE v.term = j.value GROUP BY j.value, v.doc
           ) p CROSS JOIN chunks c
           WHERE c.id = p.doc AND c.tenant_id = ?1
         )
         GROUP BY term, (rank - 1) / ${BLOCK_SIZE}`,
      )
      .bind(tenantId, json, avgdl),
  ];
}

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
