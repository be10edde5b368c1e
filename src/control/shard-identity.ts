/**
 * Chunk ids a shard may hand out: ordinal × CHUNK_ID_RANGE + 1 onwards (shard_identity). 2^40 ids a shard
 * and ordinals below 8,192 keep every id a safe JavaScript integer (< 2^53).
 */
export const CHUNK_ID_RANGE = 2 ** 40;
export const MAX_SHARD_ORDINAL = 8191;

/** The statement that gives an unnamed shard its identity (nothing when it has one already). */
export function identitySql(shard: string, ordinal: number): string {
  if (!/^SHARD_[A-Za-z0-9_]+$/.test(shard)) throw new Error(`not a shard binding name: ${shard}`);
  if (!Number.isInteger(ordinal) || ordinal < 0 || ordinal > MAX_SHARD_ORDINAL)
    throw new Error(`shard ordinal out of range: ${ordinal}`);
  const first = ordinal * CHUNK_ID_RANGE + 1;
  return `INSERT OR IGNORE INTO shard_identity (id, name, ordinal, next_chunk_id) VALUES (1, '${shard}', ${ordinal}, MAX(${first}, (SELECT IFNULL(MAX(id), 0) + 1 FROM chunks)))`;
}
