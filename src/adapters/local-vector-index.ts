import type { VectorIndex, VectorMatch, VectorRecord } from "../ports";
import { dot, fromBytes, toBytes } from "./vector-math";

const IN_CHUNK = 90; // D1: at most 100 bound parameters per statement

/**
 * Offline vector index in D1: vectors as float32 blobs, exact cosine at query time.
 * Same interface and tenant scoping as Vectorize; meant for `wrangler dev` and tests.
 */
export class LocalVectorIndex implements VectorIndex {
  readonly name = "local";

  constructor(
    private readonly db: D1Database,
    private readonly dimensions: number,
  ) {}

  async upsert(tenantId: string, records: VectorRecord[]): Promise<void> {
    if (records.length === 0) return;
    for (const r of records) this.checkLength(r.values);
    const statement = this.db.prepare(
      "INSERT INTO local_vectors (tenant_id, chunk_id, item_id, project, kind, type, vector) VALUES (?, ?, ?, ?, ?, ?, ?) " +
        "ON CONFLICT (tenant_id, chunk_id) DO UPDATE SET item_id = excluded.item_id, project = excluded.project, kind = excluded.kind, type = excluded.type, vector = excluded.vector",
    );
    await this.db.batch(records.map((r) => statement.bind(tenantId, r.chunkId, r.itemId, r.project, r.kind, r.type, toBytes(r.values))));
  }

  async query(tenantId: string, vector: Float32Array, options: { topK: number; projects?: string[] }): Promise<VectorMatch[]> {
    this.checkLength(vector);
    const projects = options.projects ?? [];
    const where = projects.length > 0 ? ` AND project IN (${projects.map(() => "?").join(",")})` : "";
    const { results } = await this.db
      .prepare(`SELECT chunk_id, vector FROM local_vectors WHERE tenant_id = ?${where}`)
      .bind(tenantId, ...projects)
      .all<{ chunk_id: number; vector: ArrayBuffer }>();
    const top: VectorMatch[] = [];
    for (const row of results) {
      const stored = fromBytes(row.vector);
      if (stored.length !== vector.length) throw this.mismatch(stored.length);
      insertTopK(top, { chunkId: row.chunk_id, score: dot(vector, stored) }, options.topK);
    }
    return top;
  }

  async getVectors(tenantId: string, chunkIds: number[]): Promise<Map<number, Float32Array>> {
    const out = new Map<number, Float32Array>();
    for (let i = 0; i < chunkIds.length; i += IN_CHUNK) {
      const ids = chunkIds.slice(i, i + IN_CHUNK);
      const { results } = await this.db
        .prepare(`SELECT chunk_id, vector FROM local_vectors WHERE tenant_id = ? AND chunk_id IN (${ids.map(() => "?").join(",")})`)
        .bind(tenantId, ...ids)
        .all<{ chunk_id: number; vector: ArrayBuffer }>();
      for (const row of results) out.set(row.chunk_id, fromBytes(row.vector));
    }
    return out;
  }

  async delete(tenantId: string, chunkIds: number[]): Promise<void> {
    const statements = [];
    for (let i = 0; i < chunkIds.length; i += IN_CHUNK) {
      const ids = chunkIds.slice(i, i + IN_CHUNK);
      statements.push(this.db.prepare(`DELETE FROM local_vectors WHERE tenant_id = ? AND chunk_id IN (${ids.map(() => "?").join(",")})`).bind(tenantId, ...ids));
    }
    if (statements.length > 0) await this.db.batch(statements);
  }

  private checkLength(vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw this.mismatch(vector.length);
  }

  private mismatch(found: number): Error {
    return new Error(`Configuration error: vector has ${found} dimensions but the index is configured for ${this.dimensions} (EMBEDDING_DIMENSIONS)`);
  }
}

/** Keeps `top` sorted by score, descending, at most k long. */
function insertTopK(top: VectorMatch[], match: VectorMatch, k: number): void {
  if (top.length === k && top[k - 1]!.score >= match.score) return;
  let i = top.length;
  while (i > 0 && top[i - 1]!.score < match.score) i--;
  top.splice(i, 0, match);
  if (top.length > k) top.pop();
}
