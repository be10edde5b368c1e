import type { StoredVectorId, VectorIndex, VectorMatch, VectorRecord } from "../ports";
import { forgetVectorIds, recordVectorIds } from "./vector-ids";

/** Vectorize limits (https://developers.cloudflare.com/vectorize/platform/limits/). */
export const VECTORIZE_LIMITS = {
  /** topK when neither values nor metadata are returned. */
  topKWithoutMetadata: 100,
  upsertBatch: 1000,
  getByIdsBatch: 20,
  deleteBatch: 1000,
} as const;
/** Queries in flight at once in queryMany. */
const PARALLEL_QUERIES = 6;
/**
 * Indexes whose dimensions this isolate has checked, and against what: adapters are built per request, and asking
 * Vectorize on each would put a describe() call before every search's query. A binding object that changes (a deploy
 * of bindings alone keeps isolates) is checked anew.
 */
const checkedDimensions = new WeakMap<Vectorize, number>();

/** The Vectorize index that holds a tenant's vectors (src/control/vector-indexes.ts: one of several, chosen per tenant). */
export type VectorizeLocator = (tenantId: string) => Promise<Vectorize>;

/**
 * Vectorize: one namespace per tenant, in the tenant's index (`index`: one binding, or a locator when a deployment
 * has several); vector ids are `<tenant>:<chunk>` because ids are unique per index, not per namespace. Metadata
 * carries project, kind, type and item id; `project` is the one metadata index queried (VECTORIZE_METADATA_INDEXES;
 * `npm run deploy` creates it before the first upsert). The binding cannot list ids, so the adapter records the ids it
 * writes in D1 (vector_ids): a row goes in before the upsert and out after the delete, so every vector the index may
 * hold has one (listIds).
 */
export class VectorizeVectorIndex implements VectorIndex {
  readonly name = "vectorize";
  private readonly locate: VectorizeLocator;

  /**
   * `locateMany`: finds the indexes of several tenants at once, ahead of their calls (listIds hands it the tenants of
   * a page, so a reconciliation pass over a shard looks them up in one go, not one a tenant).
   */
  constructor(
    index: Vectorize | VectorizeLocator,
    private readonly dimensions: number,
    private readonly db: D1Database,
    private readonly locateMany: (tenantIds: string[]) => Promise<unknown> = async () => undefined,
  ) {
    this.locate = typeof index === "function" ? index : async () => index;
  }

  async upsert(tenantId: string, records: VectorRecord[]): Promise<void> {
    const index = await this.indexOf(tenantId);
    if (records.length === 0) return;
    await recordVectorIds(
      this.db,
      tenantId,
      records.map((r) => r.chunkId),
    ).run();
    for (let i = 0; i < records.length; i += VECTORIZE_LIMITS.upsertBatch) {
      await index.upsert(
        records.slice(i, i + VECTORIZE_LIMITS.upsertBatch).map((r) => ({
          id: vectorId(tenantId, r.chunkId),
          namespace: tenantId,
          values: r.values,
          metadata: { project: r.project, kind: r.kind, type: r.type, item_id: r.itemId },
        })),
      );
    }
  }

  async query(
    tenantId: string,
    vector: Float32Array,
    options: { topK: number; projects?: readonly string[] },
  ): Promise<VectorMatch[]> {
    const index = await this.indexOf(tenantId);
    const projects = options.projects;
    const result = await index.query(vector, {
      topK: Math.min(options.topK, VECTORIZE_LIMITS.topKWithoutMetadata),
      namespace: tenantId,
      returnValues: false,
      returnMetadata: "none",
      ...(projects && projects.length > 0
        ? { filter: { project: projects.length === 1 ? projects[0]! : { $in: [...projects] } } }
        : {}),
    });
    return result.matches.flatMap((m) => {
      const chunkId = chunkIdOf(tenantId, m.id);
      return chunkId === null ? [] : [{ chunkId, score: m.score }];
    });
  }

  /** Vectorize answers one query per call: these run a few at a time (a Worker's open-connection budget). */
  async queryMany(
    tenantId: string,
    vectors: Float32Array[],
    options: { topK: number; projects?: readonly string[]; minScore?: number },
  ): Promise<VectorMatch[][]> {
    const answers: VectorMatch[][] = [];
    const minScore = options.minScore ?? -Infinity;
    for (let i = 0; i < vectors.length; i += PARALLEL_QUERIES) {
      const batch = await Promise.all(
        vectors.slice(i, i + PARALLEL_QUERIES).map((vector) => this.query(tenantId, vector, options)),
      );
      answers.push(...batch.map((matches) => matches.filter((m) => m.score >= minScore)));
    }
    return answers;
  }

  async getVectors(tenantId: string, chunkIds: number[]): Promise<Map<number, Float32Array>> {
    const out = new Map<number, Float32Array>();
    if (chunkIds.length === 0) return out;
    const index = await this.locate(tenantId);
    const batches = [];
    for (let i = 0; i < chunkIds.length; i += VECTORIZE_LIMITS.getByIdsBatch)
      batches.push(chunkIds.slice(i, i + VECTORIZE_LIMITS.getByIdsBatch).map((id) => vectorId(tenantId, id)));
    // In parallel: search reads up to 100 (5 batches) on its hot path.
    for (const found of await Promise.all(batches.map((ids) => index.getByIds(ids)))) {
      for (const v of found) {
        const chunkId = chunkIdOf(tenantId, v.id);
        if (chunkId !== null && v.namespace === tenantId)
          out.set(chunkId, Float32Array.from(v.values as ArrayLike<number>));
      }
    }
    return out;
  }

  async delete(tenantId: string, chunkIds: number[]): Promise<void> {
    if (chunkIds.length === 0) return;
    const index = await this.locate(tenantId);
    for (let i = 0; i < chunkIds.length; i += VECTORIZE_LIMITS.deleteBatch) {
      const ids = chunkIds.slice(i, i + VECTORIZE_LIMITS.deleteBatch);
      await index.deleteByIds(ids.map((id) => vectorId(tenantId, id)));
      await forgetVectorIds(this.db, tenantId, ids).run();
    }
  }

  async listIds(options: { tenantId?: string; afterChunkId: number; limit: number }): Promise<StoredVectorId[]> {
    const tenant = options.tenantId === undefined ? "" : " AND tenant_id = ?";
    const { results } = await this.db
      .prepare(`SELECT tenant_id, chunk_id FROM vector_ids WHERE chunk_id > ?${tenant} ORDER BY chunk_id LIMIT ?`)
      .bind(options.afterChunkId, ...(options.tenantId === undefined ? [] : [options.tenantId]), options.limit)
      .all<{ tenant_id: string; chunk_id: number }>();
    if (results.length > 0) await this.locateMany([...new Set(results.map((r) => r.tenant_id))]);
    return results.map((r) => ({ tenantId: r.tenant_id, chunkId: r.chunk_id }));
  }

  /** The tenant's index, its dimensions checked once an isolate: a mismatch with the embedder is a configuration error, reported clearly. */
  private async indexOf(tenantId: string): Promise<Vectorize> {
    const index = await this.locate(tenantId);
    if (checkedDimensions.get(index) === this.dimensions) return index;
    const info = await index.describe();
    if (info.dimensions !== this.dimensions) {
      throw new Error(
        `Configuration error: the Vectorize index has ${info.dimensions} dimensions but the embedder produces ${this.dimensions} (EMBEDDING_DIMENSIONS)`,
      );
    }
    checkedDimensions.set(index, this.dimensions);
    return index;
  }
}

export function vectorId(tenantId: string, chunkId: number): string {
  return `${tenantId}:${chunkId}`;
}

function chunkIdOf(tenantId: string, id: string): number | null {
  const prefix = `${tenantId}:`;
  if (!id.startsWith(prefix)) return null;
  const n = Number(id.slice(prefix.length));
  return Number.isSafeInteger(n) ? n : null;
}
