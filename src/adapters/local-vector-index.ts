import { allInOneTrip } from "../db/one-trip";
import type { StoredVectorId, VectorIndex, VectorMatch, VectorRecord } from "../ports";
import { fromHex, toHex } from "../shared/vector-math";
import { InvertedLists } from "./inverted-lists";
import { forgetVectorIds, recordVectorIds } from "./vector-ids";
import { VECTORIZE_LIMITS } from "./vectorize-index";

/** Chunk ids per statement when they travel as one JSON parameter. */
const IDS_PER_STATEMENT = 1000;
/** JSON characters per upsert statement: D1 caps a bound value at 2 MB, and one UTF-16 unit takes at most 3 bytes of UTF-8. */
const JSON_CHARS_PER_STATEMENT = 600_000;
/** Rows decoded and added to a copy at a time (InvertedLists.addMany places them in blocks). */
const ADD_GROUP = 1000;
/** Most vectors the isolate keeps in memory across all (tenant, projects) copies (~25 MB at 256 dims). */
const MAX_CACHED_VECTORS = 25_000;

/**
 * Up to this many vectors a slice is one list and every query scans it all. Above, queryMany (auto-linking)
 * probes inverted lists: a query compares the √N centroids and the vectors of the lists it probes (a sixth
 * of them, a tenth for neighbours at ≥ 0.8; InvertedLists.probesFor). Single queries (search) still scan
 * every list, so search stays exact.
 */
export const EXACT_SCAN_UP_TO = 2000;

/** An in-isolate copy of one (tenant, projects) slice of the index, refreshed by rowid. */
interface Slice {
  tenantId: string;
  /** The projects it holds; empty = every project of the tenant. */
  projects: ReadonlySet<string>;
  /** One flat list up to EXACT_SCAN_UP_TO vectors; clustered at the first queryMany above, again when the slice doubles. */
  lists: InvertedLists;
  /** The highest rowid read, and the chunk it held. */
  loadedUpTo: number;
  topChunk: number;
}
const slices = new Map<string, Slice>();

/** Drops this isolate's copies of a tenant's vectors (it moved to another shard, where its rows have other rowids). */
export function forgetLocalVectors(tenantId: string): void {
  for (const [key, slice] of slices) if (slice.tenantId === tenantId) slices.delete(key);
}
type WrittenRow = { rowid: number; chunk_id: number };

/**
 * Offline vector index in D1: vectors as float32 blobs, cosine at query time.
 * Same interface and tenant scoping as Vectorize; meant for `wrangler dev` and tests.
 * Queries scan an in-isolate copy that each query brings up to date: rows from the last rowid seen on
 * are read (an upsert is INSERT OR REPLACE, so a rewritten vector gets a new rowid), and a count that
 * disagrees, or a last-seen row that is gone (SQLite may reuse the rowids of deleted top rows), reloads
 * the slice. Without it, a query reads every blob of the project from D1.
 * Vectors cross the D1 boundary as hex text (hex(), unhex()): locally a blob travels as an array of
 * numbers, several times slower to send and read than its hex. An upsert also writes through to the
 * copies it extends (its rows are the newest), so the auto-link job that follows does not read back
 * the vectors the embed job just wrote (on an import of 5,000 items, ~10 MB of hex).
 */
export class LocalVectorIndex implements VectorIndex {
  readonly name = "local";

  /**
   * `ids`: where to keep the vector_ids record Vectorize's adapter keeps (vector-ids.ts), through a handle billed as
   * production's D1 (the index's own rows are counted apart); none in tests of the index alone.
   */
  constructor(
    private readonly db: D1Database,
    private readonly dimensions: number,
    private readonly ids: D1Database | null = null,
  ) {}

  /** One statement per ~600 KB of rows (vectors as hex in one JSON parameter), not one per vector. */
  async upsert(tenantId: string, records: VectorRecord[]): Promise<void> {
    if (records.length === 0) return;
    for (const r of records) this.checkLength(r.values);
    const statements: D1PreparedStatement[] = [];
    let group: string[] = [];
    let chars = 2;
    const flush = () => {
      statements.push(
        this.db
          .prepare(
            `INSERT OR REPLACE INTO local_vectors (tenant_id, chunk_id, item_id, project, kind, type, vector)
             SELECT ?, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, unhex(j.value ->> 5) FROM json_each(?) j
             RETURNING rowid, chunk_id`,
          )
          .bind(tenantId, `[${group.join(",")}]`),
      );
      group = [];
      chars = 2;
    };
    for (const r of records) {
      const row = JSON.stringify([r.chunkId, r.itemId, r.project, r.kind, r.type, toHex(r.values)]);
      if (group.length > 0 && chars + row.length + 1 > JSON_CHARS_PER_STATEMENT) flush();
      group.push(row);
      chars += row.length + 1;
    }
    flush();
    if (this.ids)
      await recordVectorIds(
        this.ids,
        tenantId,
        records.map((r) => r.chunkId),
      ).run();
    const written = await allInOneTrip<WrittenRow>(this.db, statements);
    this.writeThrough(
      tenantId,
      records,
      written.flatMap((r) => r.results),
    );
  }

  /**
   * Adds just-written rows to the cached copies they extend: a copy of this tenant that holds their
   * projects and whose newest row is older than them. A row another writer slipped in between is caught
   * by the next refresh, whose count then disagrees and reloads the copy; a refresh read before these
   * rows lands finds its newest row moved and reloads too.
   */
  private writeThrough(tenantId: string, records: VectorRecord[], rows: WrittenRow[]): void {
    if (rows.length === 0) return;
    const byChunk = new Map(records.map((r) => [r.chunkId, r]));
    const ordered = [...rows].sort((a, b) => a.rowid - b.rowid);
    const top = ordered.at(-1)!;
    const projects = new Set(records.map((r) => r.project));
    for (const slice of slices.values()) {
      if (slice.tenantId !== tenantId || ordered[0]!.rowid <= slice.loadedUpTo) continue;
      // The refresh finds a copy's newest row among its own projects' rows: a copy that holds only some
      // of these rows is left to its refresh.
      if (slice.projects.size > 0 && ![...projects].every((p) => slice.projects.has(p))) continue;
      slice.lists.addMany(ordered.map((row) => [row.chunk_id, byChunk.get(row.chunk_id)!.values]));
      slice.loadedUpTo = top.rowid;
      slice.topChunk = top.chunk_id;
    }
  }

  /** Search: exact, every vector of the slice compared. */
  async query(
    tenantId: string,
    vector: Float32Array,
    options: { topK: number; projects?: readonly string[] },
  ): Promise<VectorMatch[]> {
    this.checkLength(vector);
    const slice = await this.freshSlice(tenantId, options.projects ?? []);
    return slice.lists.query(vector, topK(options.topK));
  }

  /**
   * One refresh of the in-isolate copy serves every query; above EXACT_SCAN_UP_TO vectors the queries
   * probe the nearest lists (fewer for a high minScore: close neighbours sit in the nearest lists).
   */
  async queryMany(
    tenantId: string,
    vectors: Float32Array[],
    options: { topK: number; projects?: readonly string[]; minScore?: number },
  ): Promise<VectorMatch[][]> {
    for (const vector of vectors) this.checkLength(vector);
    if (vectors.length === 0) return [];
    const slice = await this.freshSlice(tenantId, options.projects ?? []);
    const size = slice.lists.size;
    if (size > EXACT_SCAN_UP_TO && (slice.lists.builtFor === 0 || size > 2 * slice.lists.builtFor))
      slice.lists = slice.lists.rebuilt();
    const lists = slice.lists;
    const probes = lists.builtFor === 0 ? undefined : lists.probesFor(options.minScore);
    return lists.queryMany(vectors, topK(options.topK), { probes, minScore: options.minScore });
  }

  private async freshSlice(tenantId: string, projects: readonly string[], reloaded = false): Promise<Slice> {
    const key = `${tenantId}\u0000${[...projects].sort().join("\u0000")}`;
    // The project list travels as one JSON parameter: a key may have many projects (D1: 100 parameters).
    const where = projects.length > 0 ? " AND project IN (SELECT value FROM json_each(?))" : "";
    const projectParams = projects.length > 0 ? [JSON.stringify(projects)] : [];
    const slice: Slice = slices.get(key) ?? {
      tenantId,
      projects: new Set(projects),
      lists: InvertedLists.flat(this.dimensions),
      loadedUpTo: 0,
      topChunk: 0,
    };
    const [fresh, count] = await this.db.batch<{ rowid?: number; chunk_id?: number; vector?: string; n?: number }>([
      this.db
        .prepare(
          `SELECT rowid, chunk_id, hex(vector) AS vector FROM local_vectors WHERE tenant_id = ?${where} AND rowid >= ? ORDER BY rowid`,
        )
        .bind(tenantId, ...projectParams, slice.loadedUpTo),
      this.db
        .prepare(`SELECT COUNT(*) AS n FROM local_vectors WHERE tenant_id = ?${where}`)
        .bind(tenantId, ...projectParams),
    ]);
    const rows = fresh!.results;
    // The row read last must still hold its chunk; if it went, rows at the top were deleted and a new row
    // may sit under a reused rowid that `rowid >` would never show.
    const topIntact =
      slice.loadedUpTo === 0 || (rows[0]?.rowid === slice.loadedUpTo && rows[0]?.chunk_id === slice.topChunk);
    if (topIntact) {
      // Decoded a group at a time: a reload of many rows never holds them all twice.
      for (let i = 0; i < rows.length; i += ADD_GROUP) {
        const group = rows.slice(i, i + ADD_GROUP);
        slice.lists.addMany(
          group.map((row) => {
            const vector = fromHex(row.vector!);
            if (vector.length !== this.dimensions) throw this.mismatch(vector.length);
            return [row.chunk_id!, vector];
          }),
        );
        slice.loadedUpTo = group.at(-1)!.rowid!;
        slice.topChunk = group.at(-1)!.chunk_id!;
      }
    }
    if ((!topIntact || slice.lists.size !== count!.results[0]!.n) && !reloaded) {
      slices.delete(key); // rows were deleted since the copy was made
      return this.freshSlice(tenantId, projects, true);
    }
    slices.delete(key); // re-insert: most recently used last
    slices.set(key, slice);
    let cached = 0;
    for (const s of slices.values()) cached += s.lists.size;
    for (const [k, s] of slices) {
      if (cached <= MAX_CACHED_VECTORS || k === key) break;
      slices.delete(k);
      cached -= s.lists.size;
    }
    return slice;
  }

  async getVectors(tenantId: string, chunkIds: number[]): Promise<Map<number, Float32Array>> {
    const out = new Map<number, Float32Array>();
    const statements: D1PreparedStatement[] = [];
    for (let i = 0; i < chunkIds.length; i += IDS_PER_STATEMENT) {
      statements.push(
        this.db
          .prepare(
            "SELECT chunk_id, hex(vector) AS vector FROM local_vectors WHERE tenant_id = ? AND chunk_id IN (SELECT value FROM json_each(?))",
          )
          .bind(tenantId, JSON.stringify(chunkIds.slice(i, i + IDS_PER_STATEMENT))),
      );
    }
    for (const { results: rows } of await allInOneTrip<{ chunk_id: number; vector: string }>(this.db, statements))
      for (const row of rows) out.set(row.chunk_id, fromHex(row.vector));
    return out;
  }

  async delete(tenantId: string, chunkIds: number[]): Promise<void> {
    const statements = [];
    for (let i = 0; i < chunkIds.length; i += IDS_PER_STATEMENT) {
      statements.push(
        this.db
          .prepare("DELETE FROM local_vectors WHERE tenant_id = ? AND chunk_id IN (SELECT value FROM json_each(?))")
          .bind(tenantId, JSON.stringify(chunkIds.slice(i, i + IDS_PER_STATEMENT))),
      );
    }
    if (statements.length === 0) return;
    await this.db.batch(statements);
    const ids = this.ids;
    if (ids) {
      const forgets = [];
      for (let i = 0; i < chunkIds.length; i += IDS_PER_STATEMENT)
        forgets.push(forgetVectorIds(ids, tenantId, chunkIds.slice(i, i + IDS_PER_STATEMENT)));
      await ids.batch(forgets);
    }
  }

  async listIds(options: { tenantId?: string; afterChunkId: number; limit: number }): Promise<StoredVectorId[]> {
    const tenant = options.tenantId === undefined ? "" : " AND tenant_id = ?";
    const { results } = await this.db
      .prepare(`SELECT tenant_id, chunk_id FROM local_vectors WHERE chunk_id > ?${tenant} ORDER BY chunk_id LIMIT ?`)
      .bind(options.afterChunkId, ...(options.tenantId === undefined ? [] : [options.tenantId]), options.limit)
      .all<{ tenant_id: string; chunk_id: number }>();
    return results.map((r) => ({ tenantId: r.tenant_id, chunkId: r.chunk_id }));
  }

  private checkLength(vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw this.mismatch(vector.length);
  }

  private mismatch(found: number): Error {
    return new Error(
      `Configuration error: vector has ${found} dimensions but the index is configured for ${this.dimensions} (EMBEDDING_DIMENSIONS)`,
    );
  }
}

/** Vectorize answers at most 100 matches (without values or metadata): the stand-in answers as many, no more. */
function topK(asked: number): number {
  return Math.min(asked, VECTORIZE_LIMITS.topKWithoutMetadata);
}
