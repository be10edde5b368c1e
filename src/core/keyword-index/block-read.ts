import type { TenantScope } from "../../db/scope";
import { keywordCode, queryPhrases, storedTerm, tenantIndexText } from "../../shared/fts-text";
import { BLOCKS_READ, type BlockEntry, decodeEntries, RANGE_END } from "./blocks";
import { keywordTotalsCte } from "./scores";
import { forwardFreqSql, forwardKey } from "./term-freqs";

/**
 * A search's first trip over posting blocks (blocks.ts): for each query word, its flushes, its first BLOCKS_READ full
 * blocks and the bound of the next, its tail (the chunks after its blocks, each scored from its forward index), its
 * chunk count; the chunks changed since their words were built; the tenant's totals. One statement.
 */

/** A query word as the blocks are read for it: its phrase, stored term, MATCH text and forward index key. */
export interface BlockTerm {
  phrase: number;
  term: string;
  match: string;
  key: string;
}

/**
 * The query's words for a read of blocks, or null where the blocks cannot serve it: a phrase of several tokens (a
 * CJK run), or a word the forward index leaves out (its tail could not be scored). Null too when nothing is searchable.
 */
export function blockTerms(tenantId: string, query: string): BlockTerm[] | null {
  const phrases = queryPhrases(query);
  if (phrases === null || phrases.some((tokens) => tokens.length > 1)) return null;
  const code = keywordCode(tenantId);
  const terms: BlockTerm[] = [];
  for (const [phrase, [token]] of phrases.entries()) {
    const term = storedTerm(code, token!);
    const key = forwardKey(code, term);
    if (key === null) return null;
    terms.push({ phrase, term, match: `"${tenantIndexText(code, token!).text.trim()}"`, key });
  }
  return terms;
}

/** A word's postings as read: by chunk, its frequency, length and project. */
export type Posting = { f: number; len: number | null; project: string | null };

export interface WordRead {
  /** Chunks holding the word (null: none). */
  df: number | null;
  postings: Map<number, Posting>;
  /** The first full block not read, or null when every one was. */
  next: number | null;
  /** The highest impact of the blocks not read, at `avgdl` (0 when every one was). */
  bound: number;
  /** The average length the full blocks' impacts were computed with, and their build's last chunk (a consistency check). */
  avgdl: number;
  built: number | null;
}

export interface BlocksRead {
  /** By stored term. */
  words: Map<string, WordRead>;
  n: number;
  avgdl: number;
  /** Chunks changed since their words' blocks were built: their entries are left out, their rows scored instead. */
  changed: Set<number>;
  /**
   * Whether the tenant has chunks the blocks cannot serve until the re-index sweep has rewritten them: indexed the old
   * way, without a forward index, or with an older tokenization (indexing.ts).
   */
  unserved: boolean;
}

/**
 * A row of the first trip's answer: `kind` s (the tenant's totals and whether the blocks serve it), d (a word's chunk
 * count), b (a block), t (a tail posting), g (a changed chunk). Rows, not one packed value: a word's blocks and a long
 * tail (a word not built yet) would pass D1's 2 MB a value.
 */
export type BlocksRow = {
  kind: "s" | "d" | "b" | "t" | "g";
  i: number | null;
  a: number | null;
  b: number | null;
  c: number | null;
  d: number | string | null;
  e: string | null;
};

/** The first trip's statement; read its rows with `parseBlocksRead`. */
export function blocksStatement(scope: TenantScope, terms: BlockTerm[], blocksRead = BLOCKS_READ): D1PreparedStatement {
  const words = [...new Map(terms.map((t) => [t.term, t])).values()];
  const json = JSON.stringify(words.map((t) => [t.term, t.match, t.key]));
  return scope.d1
    .prepare(
      `WITH ${keywordTotalsCte("?2")},
       t(i, term, match, bare, tagged) AS MATERIALIZED (
         SELECT j.key, j.value ->> 0, j.value ->> 1, ' ' || (j.value ->> 2) || ' ', ' ' || (j.value ->> 2) || ':' FROM json_each(?1) j
       ),
       -- Where each word's blocks end: the newest flush (the lowest block) or the full build.
       e(i, bottom) AS MATERIALIZED (
         SELECT t.i, (SELECT MIN(block) FROM keyword_blocks k WHERE k.tenant_id = ?2 AND k.term = t.term) FROM t
       ),
       g(chunk_id) AS MATERIALIZED (SELECT DISTINCT chunk_id FROM keyword_block_changes WHERE tenant_id = ?2),
       -- The tail: a word's chunks after its blocks' last, in the shard's range; every chunk of a word without blocks.
       x(i, doc, bare, tagged) AS MATERIALIZED (
         SELECT t.i, f.rowid, t.bare, t.tagged FROM t CROSS JOIN e CROSS JOIN chunks_fts f
         WHERE e.i = t.i AND f.chunks_fts MATCH t.match
           AND f.rowid > COALESCE((SELECT through FROM keyword_blocks k WHERE k.tenant_id = ?2 AND k.term = t.term AND k.block = MIN(e.bottom, 0)), -1)
           AND f.rowid <= CASE WHEN e.bottom IS NULL THEN 9007199254740991 ELSE ${RANGE_END} END
         UNION
         SELECT t.i, g.chunk_id, t.bare, t.tagged FROM t CROSS JOIN g
       )
       SELECT 's' AS kind, NULL AS i, n AS a, avgdl AS b,
         EXISTS (SELECT 1 FROM chunks WHERE tenant_id = ?2 AND fts_tokens IS NULL)
           OR EXISTS (SELECT 1 FROM chunks WHERE tenant_id = ?2 AND term_freqs IS NULL)
           OR EXISTS (SELECT 1 FROM chunks WHERE tenant_id = ?2 AND keyword_version IS NULL) AS c, NULL AS d, NULL AS e
       FROM keyword_totals
       UNION ALL
       SELECT 'd', t.i, (SELECT r.doc FROM chunks_fts_row r WHERE r.term = t.term), NULL, NULL, NULL, NULL FROM t
       UNION ALL
       SELECT 'b', t.i, k.block, k.max_impact, k.avgdl, k.through, CASE WHEN k.block < ?3 THEN k.entries END
       FROM t CROSS JOIN keyword_blocks k WHERE k.tenant_id = ?2 AND k.term = t.term AND k.block <= ?3
       UNION ALL
       SELECT 't', i, doc, f, len, project, NULL FROM (
         SELECT x.i, x.doc, ${forwardFreqSql("c.term_freqs", "x.bare", "x.tagged")} AS f, c.fts_tokens AS len, c.project
         FROM x CROSS JOIN chunks c WHERE c.id = x.doc AND c.tenant_id = ?2)
       WHERE f IS NOT NULL
       UNION ALL
       SELECT 'g', NULL, chunk_id, NULL, NULL, NULL, NULL FROM g`,
    )
    .bind(json, scope.tenantId, blocksRead);
}

/** The first trip's answer, by stored term (the order of `blocksStatement`'s words). */
export function parseBlocksRead(rows: BlocksRow[], terms: BlockTerm[]): BlocksRead {
  const words = [...new Map(terms.map((t) => [t.term, t])).values()];
  const totals = rows.find((r) => r.kind === "s")!;
  const avgdl = totals.b!;
  const changed = new Set(rows.flatMap((r) => (r.kind === "g" ? [r.a!] : [])));
  const reads: WordRead[] = words.map(() => ({
    df: null,
    postings: new Map(),
    next: null,
    bound: 0,
    avgdl,
    built: null,
  }));
  for (const row of rows) {
    const read = row.i === null ? null : reads[row.i]!;
    if (row.kind === "d") read!.df = row.a;
    else if (row.kind === "b") {
      if (row.a! >= 0) [read!.avgdl, read!.built] = [row.c!, row.d as number];
      if (row.e === null) [read!.next, read!.bound] = [row.a, row.b!];
      else addEntries(read!, decodeEntries(row.e), changed);
    } else if (row.kind === "t") read!.postings.set(row.a!, { f: row.b!, len: row.c, project: row.d as string | null });
  }
  return {
    words: new Map(words.map((t, i) => [t.term, reads[i]!])),
    n: totals.a!,
    avgdl,
    changed,
    unserved: totals.c === 1,
  };
}

/** Entries of a block, but those of changed chunks (their rows are read instead). */
export function addEntries(read: WordRead, entries: BlockEntry[], changed: Set<number>): void {
  for (const [doc, f, len, project] of entries) if (!changed.has(doc)) read.postings.set(doc, { f, len, project });
}

/**
 * The full blocks a first trip left out, for the words given (each from its `next`), where the bound says they may
 * hold a top hit; with each word's build (block 0's through), so a word built anew between the trips is told apart.
 */
export function moreBlocksStatement(scope: TenantScope, words: { term: string; from: number }[]): D1PreparedStatement {
  return scope.d1
    .prepare(
      `SELECT j.key AS i, k.block, k.through, CASE WHEN k.block > 0 THEN k.entries END AS entries
       FROM json_each(?1) j CROSS JOIN keyword_blocks k
       WHERE k.tenant_id = ?2 AND k.term = j.value ->> 0 AND (k.block >= j.value ->> 1 OR k.block = 0)`,
    )
    .bind(JSON.stringify(words.map((w) => [w.term, w.from])), scope.tenantId);
}
