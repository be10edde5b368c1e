/**
 * An in-memory stand-in for the Vectorize binding (V2), enforcing the limits the real one does
 * (developers.cloudflare.com/vectorize/platform/limits): topK ≤ 100 without values/metadata and ≤ 20 with
 * them, getByIds ≤ 20 ids, 1,000 vectors an upsert, dimensions, ids and namespaces ≤ 64 bytes, metadata ≤ 10 KiB
 * a vector, at most 10 metadata indexes, equality / $in filters on indexed metadata only, 10 M vectors and 50,000
 * namespaces an index. Writes are processed asynchronously: with `visibleAfterMs`, a vector is found by query and
 * getByIds only that long after its upsert. `heldElsewhere` stands for vectors other tenants already keep in the
 * index (counted by describe() and against the limit, never returned), so a test can meet a nearly full index.
 */
export class FakeVectorize {
  readonly vectors = new Map<
    string,
    { id: string; namespace?: string; values: number[]; metadata: Record<string, unknown>; visibleAt: number }
  >();
  readonly calls: { method: string; args: unknown }[] = [];
  static readonly MAX_VECTORS = 10_000_000;
  static readonly MAX_NAMESPACES = 50_000;

  constructor(
    readonly dimensions: number,
    readonly indexedMetadata: string[] = ["project"],
    readonly options: { visibleAfterMs?: number; heldElsewhere?: number } = {},
  ) {
    if (indexedMetadata.length > 10) throw new Error("VECTOR_INDEX_ERROR: at most 10 metadata indexes");
  }

  /** Every vector visible at once, as if Vectorize had processed all mutations. */
  processAll(): void {
    for (const v of this.vectors.values()) v.visibleAt = 0;
  }

  private visible(v: { visibleAt: number }): boolean {
    return v.visibleAt <= Date.now();
  }

  async describe() {
    this.calls.push({ method: "describe", args: null });
    return {
      vectorCount: this.vectors.size + (this.options.heldElsewhere ?? 0),
      dimensions: this.dimensions,
      processedUpToDatetime: 0,
      processedUpToMutation: 0,
    };
  }

  async upsert(
    vectors: { id: string; namespace?: string; values: ArrayLike<number>; metadata?: Record<string, unknown> }[],
  ) {
    this.calls.push({ method: "upsert", args: vectors.length });
    if (vectors.length > 1000) throw new Error("VECTOR_UPSERT_ERROR: too many vectors");
    for (const v of vectors) {
      if (v.values.length !== this.dimensions)
        throw new Error(`VECTOR_UPSERT_ERROR: expected ${this.dimensions} dimensions, got ${v.values.length}`);
      if (new TextEncoder().encode(v.id).length > 64) throw new Error("VECTOR_UPSERT_ERROR: id longer than 64 bytes");
      if (v.namespace !== undefined && new TextEncoder().encode(v.namespace).length > 64)
        throw new Error("VECTOR_UPSERT_ERROR: namespace longer than 64 bytes");
      if (new TextEncoder().encode(JSON.stringify(v.metadata ?? {})).length > 10 * 1024)
        throw new Error("VECTOR_UPSERT_ERROR: metadata over 10 KiB");
    }
    const added = vectors.filter((v) => !this.vectors.has(v.id));
    if (this.vectors.size + (this.options.heldElsewhere ?? 0) + added.length > FakeVectorize.MAX_VECTORS)
      throw new Error("VECTOR_UPSERT_ERROR: the index holds its maximum of 10,000,000 vectors");
    const namespaces = new Set([...this.vectors.values()].map((v) => v.namespace));
    for (const v of added) namespaces.add(v.namespace);
    if (namespaces.size > FakeVectorize.MAX_NAMESPACES)
      throw new Error("VECTOR_UPSERT_ERROR: the index holds its maximum of 50,000 namespaces");
    const visibleAt = Date.now() + (this.options.visibleAfterMs ?? 0);
    for (const v of vectors) {
      this.vectors.set(v.id, {
        id: v.id,
        namespace: v.namespace,
        values: Array.from(v.values),
        metadata: v.metadata ?? {},
        visibleAt,
      });
    }
    return { mutationId: crypto.randomUUID() };
  }

  async query(
    vector: ArrayLike<number>,
    options: {
      topK?: number;
      namespace?: string;
      returnValues?: boolean;
      returnMetadata?: string | boolean;
      filter?: Record<string, unknown>;
    } = {},
  ) {
    this.calls.push({ method: "query", args: options });
    const topK = options.topK ?? 5;
    const heavy = options.returnValues === true || options.returnMetadata === "all" || options.returnMetadata === true;
    if (topK > (heavy ? 20 : 100))
      throw new Error(`VECTOR_QUERY_ERROR: topK ${topK} exceeds the limit of ${heavy ? 20 : 100}`);
    for (const key of Object.keys(options.filter ?? {})) {
      if (!this.indexedMetadata.includes(key)) throw new Error(`VECTOR_QUERY_ERROR: no metadata index on '${key}'`);
    }
    const matches = [...this.vectors.values()]
      .filter((v) => this.visible(v) && v.namespace === options.namespace)
      .filter((v) => matchesFilter(v.metadata, options.filter ?? {}))
      .map((v) => ({
        id: v.id,
        score: cosine(vector, v.values),
        ...(options.returnValues ? { values: v.values } : {}),
      }))
      .sort((a, b) => b.score - a.score)
      .slice(0, topK);
    return { matches, count: matches.length };
  }

  async getByIds(ids: string[]) {
    if (ids.length > 20) throw new Error("VECTOR_GET_ERROR: at most 20 ids");
    return ids.flatMap((id) => {
      const v = this.vectors.get(id);
      return v && this.visible(v) ? [v] : [];
    });
  }

  async deleteByIds(ids: string[]) {
    for (const id of ids) this.vectors.delete(id);
    return { mutationId: crypto.randomUUID() };
  }
}

function matchesFilter(metadata: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  return Object.entries(filter).every(([key, condition]) => {
    if (condition !== null && typeof condition === "object" && "$in" in condition)
      return (condition.$in as unknown[]).includes(metadata[key]);
    return metadata[key] === condition;
  });
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / (Math.sqrt(na * nb) || 1);
}
