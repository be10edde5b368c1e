import { storedTerm } from "../../shared/fts-text";

/**
 * Posting blocks (keyword_blocks): each word of a tenant in at least BLOCK_TERM_DF chunks has its postings kept as rows
 * of BLOCK_SIZE entries (chunk, frequency, length, project), so a search reads a word's postings in a few rows, where
 * reading them from the index costs a row per posting and grows with the tenant.
 *
 * - Blocks 0, 1, ... hold the word's postings as of its last full build, ordered by impact (BM25's term frequency
 *   part, length-normalized at the tenant's average length then), best first; each block keeps its highest impact, a
 *   bound on every entry after it.
 * - Blocks -1, -2, ... (flushes) hold the postings written since, each those of one flush, up to its `through`.
 * - The postings written after the last flush (the tail) are read from the index at search time, by chunk id.
 *
 * A search reads every flush, the first BLOCKS_READ full blocks and the bound of the next, and the tail
 * (block-read.ts); it scores the chunks it found exactly and certifies its top hits against the bound, reading
 * further only when the bound requires (block-rank.ts). The minute pass keeps the blocks (block-pass.ts): a word
 * whose tail reached FLUSH_AT postings gets a flush, a word past FLUSHES_MAX flushes a full build.
 *
 * Chunk ids: the tail is the range (through, end of the shard's own id range]. Chunks a move brought in keep ids from
 * another shard's range: the full build holds them, and the tail never does.
 */
export const BLOCK_SIZE = 500;
/** Words in fewer chunks have no blocks: a search reads their postings (two rows each at most BLOCK_TERM_DF). */
export const BLOCK_TERM_DF = 16;
/** Full blocks a search reads in its first trip, besides the flushes. */
export const BLOCKS_READ = 16;
/** A word's tail gets a flush once it holds this many postings; more postings once its blocks are many. */
export const FLUSH_AT = 16;
/** Flushes a word keeps before its next one is a full build instead. */
export const FLUSHES_MAX = 8;

/** The tail a flush waits for: more for a word of many blocks, whose full build costs more. */
export function flushAt(blocks: number): number {
  return Math.max(FLUSH_AT, 2 * blocks);
}

/**
 * An entry: chunk id, frequency (content 1, context 0.5), the chunk's length (fts_tokens; null for a row indexed before
 * tenant terms, which the blocks never serve) and its project.
 */
export type BlockEntry = [number, number, number | null, string | null];

export function decodeEntries(entries: string): BlockEntry[] {
  return JSON.parse(entries) as BlockEntry[];
}

/**
 * The last chunk id the shard gave out: chunks written later have higher ids (its counter, shard_identity), even
 * where chunks moved in from another shard's range hold higher ones.
 */
export const LAST_CHUNK_ID =
  "COALESCE((SELECT next_chunk_id - 1 FROM shard_identity WHERE id = 1), (SELECT MAX(id) FROM chunks), 0)";

/**
 * The last id of the shard's own range (2^40 ids an ordinal: CHUNK_ID_RANGE, src/control/shard-identity.ts): a tail
 * ends there. A shard without identity has no bound.
 */
export const RANGE_END =
  "COALESCE((SELECT (ordinal + 1) * 1099511627776 FROM shard_identity WHERE id = 1), 9007199254740991)";

/**
 * A stored term as chunks_fts is asked it in MATCH, or null where the index's stemmer would turn the term into
 * another (its stems are not all fixed points): such a word's tail is read from its postings.
 */
export function termMatch(term: string): string | null {
  return storedTerm("", term) === term && /^[\p{L}\p{N}]+$/u.test(term) ? `"${term}"` : null;
}
