/**
 * The ids a vector index may hold, recorded in D1 (vector_ids): Vectorize cannot list its ids, so its adapter writes a
 * row before each upsert and deletes it after each delete (vectorize-index.ts). The local index keeps the same record,
 * so that what D1 bills locally is what production writes.
 */
export function recordVectorIds(db: D1Database, tenantId: string, chunkIds: readonly number[]): D1PreparedStatement {
  return db
    .prepare("INSERT OR IGNORE INTO vector_ids (tenant_id, chunk_id) SELECT ?, value FROM json_each(?)")
    .bind(tenantId, JSON.stringify(chunkIds));
}

export function forgetVectorIds(db: D1Database, tenantId: string, chunkIds: readonly number[]): D1PreparedStatement {
  return db
    .prepare("DELETE FROM vector_ids WHERE tenant_id = ? AND chunk_id IN (SELECT value FROM json_each(?))")
    .bind(tenantId, JSON.stringify(chunkIds));
}
