import type { TenantScope } from "../../db/scope";
import { KEYWORD_VERSION } from "../../shared/base-forms";
import { keywordRow } from "../keyword-index/indexing";
import { COUNT_KEYWORD_WRITES, keywordWriteUnits } from "../keyword-index/write-counter";
import { statedTimesJson } from "../search/stated-times";

/** One chunk as written: its row in `chunks` and its keyword-index row in `chunks_fts`. */
export interface ChunkRow {
  itemId: string;
  index: number;
  content: string;
  context: string;
  tokens: number;
  /** The keyword index's text (tenant-coded terms) and its token count. */
  ftsContent: string;
  ftsContext: string;
  ftsTokens: number;
  /** The chunk's forward index (term-freqs.ts). */
  termFreqs: string;
  /** The times its text states, resolved against when its item was said (stated-times.ts). */
  statedTimes: string;
}

/**
 * A chunk's row with its keyword-index text and forward index, in the tenant's term space, and the times its
 * text states as of `said` (its item's created_at).
 */
export function chunkRow(
  tenantId: string,
  itemId: string,
  index: number,
  chunk: { content: string; tokens: number },
  context: string,
  said: number,
): ChunkRow {
  const indexed = keywordRow(tenantId, chunk.content, context);
  return {
    itemId,
    index,
    content: chunk.content,
    context,
    tokens: chunk.tokens,
    ftsContent: indexed.content,
    ftsContext: indexed.context,
    ftsTokens: indexed.tokens,
    termFreqs: indexed.freqs,
    statedTimes: statedTimesJson(chunk.content, said),
  };
}

/** JSON characters per statement: D1 caps a bound value at 2 MB, and one UTF-16 unit takes at most 3 bytes of UTF-8. */
export const JSON_CHARS_PER_STATEMENT = 600_000;

/**
 * Statements that insert the chunks and their keyword rows: three per group of rows bound as one JSON
 * array, instead of two per chunk (a batch of 100 documents: 3 statements, not 200). Run them after the
 * items' inserts in the same batch; the keyword rows find their chunk ids by (item, index), row by row
 * through the (tenant, item, index) index (CROSS JOIN keeps the JSON rows outside). A chunk takes its item's
 * project from the item's row, written earlier in the batch.
 * Chunk ids come from the database's own counter (shard_identity, one range per shard, so ids stay unique
 * when a tenant moves between shards); a database without that row numbers after its highest id. The same row's
 * keyword write counter takes the rows' tokens (write-counter.ts), at no row written more.
 */
export function insertChunkRows(scope: TenantScope, rows: ChunkRow[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  const encoded = rows.map((r) =>
    JSON.stringify([
      r.itemId,
      r.index,
      r.content,
      r.context,
      r.tokens,
      r.ftsContent,
      r.ftsContext,
      r.ftsTokens,
      r.termFreqs,
      r.statedTimes,
    ]),
  );
  for (const { json, count, first } of jsonArrays(encoded)) {
    const units = keywordWriteUnits(rows.slice(first, first + count).map((r) => ({ tokens: r.ftsTokens })));
    statements.push(
      scope.d1
        .prepare(
          `INSERT INTO chunks (id, tenant_id, item_id, chunk_index, content, context, tokens, fts_tokens, term_freqs, stated_times, keyword_version, project)
           SELECT n.next + j.key, ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 7, j.value ->> 8, j.value ->> 9, ${KEYWORD_VERSION},
                  (SELECT project FROM items WHERE id = j.value ->> 0 AND tenant_id = ?1)
           FROM (SELECT COALESCE((SELECT next_chunk_id FROM shard_identity WHERE id = 1), (SELECT IFNULL(MAX(id), 0) + 1 FROM chunks)) AS next) n, json_each(?2) j`,
        )
        .bind(scope.tenantId, json),
      scope.d1
        .prepare(`UPDATE shard_identity SET ${COUNT_KEYWORD_WRITES}, next_chunk_id = next_chunk_id + ?3 WHERE id = 1`)
        .bind(units, Date.now(), count),
      scope.d1
        .prepare(
          `INSERT INTO chunks_fts (rowid, content, context)
           SELECT c.id, j.value ->> 5, j.value ->> 6 FROM json_each(?1) j
           CROSS JOIN chunks c ON c.tenant_id = ?2 AND c.item_id = j.value ->> 0 AND c.chunk_index = j.value ->> 1`,
        )
        .bind(json, scope.tenantId),
    );
  }
  return statements;
}

/**
 * The rows joined into JSON arrays of at most JSON_CHARS_PER_STATEMENT characters (a longer row stands alone), each
 * with its count and the index of its first row.
 */
function* jsonArrays(encoded: string[]): Generator<{ json: string; count: number; first: number }> {
  let group: string[] = [];
  let first = 0;
  let chars = 2;
  for (const [i, row] of encoded.entries()) {
    if (group.length > 0 && chars + row.length + 1 > JSON_CHARS_PER_STATEMENT) {
      yield { json: `[${group.join(",")}]`, count: group.length, first };
      group = [];
      first = i;
      chars = 2;
    }
    group.push(row);
    chars += row.length + 1;
  }
  if (group.length > 0) yield { json: `[${group.join(",")}]`, count: group.length, first };
}
