import { dots4x2, LANES, pack, scoreRows } from "./block-dots";
import { dotRange, VectorList } from "./vector-list";

export interface ScoredId {
  chunkId: number;
  score: number;
}

/** Lloyd refinements of the centroids at a rebuild (each one pass over the training sample). */
const REFINEMENTS = 3;
/**
 * Vectors per list the centroids learn from: a sample, so a rebuild of 10,000 costs about two passes over
 * them, not four (every vector is then placed once). A smaller sample places the centroids less well, and
 * queries then find fewer of the true neighbours.
 */
const TRAIN_PER_LIST = 48;
const GOLDEN = (Math.sqrt(5) - 1) / 2;

/** A query during queryMany: its best matches so far and the score a vector must reach to join them. */
interface Query {
  vector: Float32Array;
  top: ScoredId[];
  floor: number;
  /** Bound on what the vector's tail can add, per unit of a stored vector's tail norm. */
  tail: number;
}

/**
 * An inverted-file index over unit vectors (the way approximate indexes such as Vectorize avoid
 * scanning everything): vectors are grouped under about √N centroids found by spherical k-means, and a
 * query scans only the lists of its nearest centroids, so it costs about √N + N·probes/√N dot products
 * instead of N. With one list (`flat`) a query scans everything: exact. Vectors join the nearest list as
 * they arrive; the owner rebuilds (`clustered`) when the collection has grown, so the centroids keep up
 * with the data. Each list keeps its vectors contiguous (one Float32Array), so scanning is a plain loop.
 */
export class InvertedLists {
  /** Size of the collection the centroids were computed from (0 for a flat index). */
  readonly builtFor: number;
  /** Vectors the last query compared, per query (what a query costs; the tests hold it well under N). */
  lastScanned = 0;
  private readonly centroids: Float32Array;
  private readonly lists: VectorList[];
  /** Where a vector's tail starts (VectorList.tails): after the first 3/8 of its dimensions. */
  private readonly head: number;
  /** Where each vector sits: list × 2^32 + slot. */
  private readonly place = new Map<number, number>();
  /** scanBlock's queries' heads, interleaved (block-dots.ts), and their dot products (reused). */
  private readonly packed: Float64Array;
  private readonly dots = new Float64Array(2 * LANES);

  private constructor(
    readonly dimensions: number,
    centroids: Float32Array,
    builtFor: number,
    capacities: number[],
  ) {
    this.centroids = centroids;
    this.builtFor = builtFor;
    this.head = Math.floor((dimensions * 3) / 8);
    this.packed = new Float64Array(LANES * this.head);
    this.lists = capacities.map((capacity) => new VectorList(dimensions, this.head, capacity));
  }

  /** One list, no centroids: every query is an exact scan. */
  static flat(dimensions: number): InvertedLists {
    return new InvertedLists(dimensions, new Float32Array(0), 0, [64]);
  }

  /**
   * About √N lists from spherical k-means (deterministic: seeds, then `refinements` Lloyd steps over a sample
   * of `trainPerList` vectors a list), then every vector placed in its nearest list.
   */
  static clustered(
    dimensions: number,
    entries: readonly (readonly [number, Float32Array])[],
    refinements = REFINEMENTS,
    trainPerList = TRAIN_PER_LIST,
  ): InvertedLists {
    const k = Math.max(1, Math.round(Math.sqrt(entries.length)));
    const centroids = new Float32Array(k * dimensions);
    // Seeds and training sample at golden-ratio strides: spread over the collection like even spacing, but
    // never in step with a period in it (evenly spaced seeds over data whose second half repeats the first
    // pick each vector twice: twin centroids that split one cluster between two lists).
    const spread = (i: number) => entries[Math.floor(((i * GOLDEN) % 1) * entries.length)]![1];
    for (let list = 0; list < k; list++) centroids.set(spread(list), list * dimensions);
    const sampleSize = Math.min(entries.length, trainPerList * k);
    const sample =
      sampleSize === entries.length
        ? entries.map(([, v]) => v)
        : Array.from({ length: sampleSize }, (_, i) => spread(i));
    for (let step = 0; step < refinements && k > 1; step++) {
      const sums = new Float64Array(k * dimensions);
      nearestOf(sample, centroids, dimensions).forEach((list, i) => {
        const v = sample[i]!;
        for (let d = 0; d < dimensions; d++) sums[list * dimensions + d]! += v[d]!;
      });
      for (let list = 0; list < k; list++) {
        const offset = list * dimensions;
        let norm = 0;
        for (let d = 0; d < dimensions; d++) norm += sums[offset + d]! * sums[offset + d]!;
        if (norm === 0) continue; // an empty list keeps its centroid
        norm = Math.sqrt(norm);
        for (let d = 0; d < dimensions; d++) centroids[offset + d] = sums[offset + d]! / norm;
      }
    }
    const assignment = nearestOf(
      entries.map(([, v]) => v),
      centroids,
      dimensions,
    );
    const sizes = new Array<number>(k).fill(0);
    for (const list of assignment) sizes[list]!++;
    // Room for the lists to grow by half before they reallocate (the owner rebuilds at double the size).
    const index = new InvertedLists(
      dimensions,
      centroids,
      entries.length,
      sizes.map((n) => Math.ceil(n * 1.5) + 8),
    );
    entries.forEach(([chunkId, v], i) =>
      index.place.set(chunkId, assignment[i]! * 2 ** 32 + index.lists[assignment[i]!]!.push(chunkId, v)),
    );
    return index;
  }

  /** The same vectors in about √N freshly computed lists. */
  rebuilt(): InvertedLists {
    return InvertedLists.clustered(this.dimensions, [...this.entries()]);
  }

  get size(): number {
    return this.place.size;
  }

  get listCount(): number {
    return this.lists.length;
  }

  has(chunkId: number): boolean {
    return this.place.has(chunkId);
  }

  /** A stored vector (a view: valid until the index changes), or undefined. */
  vector(chunkId: number): Float32Array | undefined {
    const at = this.place.get(chunkId);
    return at === undefined ? undefined : this.lists[Math.floor(at / 2 ** 32)]!.vector(at % 2 ** 32);
  }

  /** Every (chunk id, vector view) pair. */
  *entries(): Generator<[number, Float32Array]> {
    for (const list of this.lists)
      for (let slot = 0; slot < list.size; slot++) yield [list.ids[slot]!, list.vector(slot)];
  }

  /**
   * Lists a query should probe: a sixth of them (at least 4), or a tenth for neighbours at ≥ 0.8 similarity,
   * which sit in the lists nearest the query. test/node/inverted-lists.test.ts holds the neighbours these probes
   * find against an exact scan's.
   */
  probesFor(minScore?: number): number {
    const k = this.lists.length;
    return Math.min(k, Math.max(4, Math.ceil(k / (minScore !== undefined && minScore >= 0.8 ? 10 : 6))));
  }

  /** Adds a vector (copied), or moves it when it was rewritten. */
  add(chunkId: number, vector: Float32Array): void {
    this.addMany([[chunkId, vector]]);
  }

  /** Adds vectors (copied) in order, each to its nearest list; a rewritten one moves. */
  addMany(entries: readonly (readonly [number, Float32Array])[]): void {
    for (const [, vector] of entries) {
      if (vector.length !== this.dimensions)
        throw new Error(`vector has ${vector.length} dimensions, the index ${this.dimensions}`);
    }
    const vectors = entries.map(([, v]) => v);
    const lists = this.lists.length === 1 ? vectors.map(() => 0) : nearestOf(vectors, this.centroids, this.dimensions);
    entries.forEach(([chunkId, vector], i) => {
      this.delete(chunkId);
      const list = lists[i]!;
      this.place.set(chunkId, list * 2 ** 32 + this.lists[list]!.push(chunkId, vector));
    });
  }

  delete(chunkId: number): boolean {
    const at = this.place.get(chunkId);
    if (at === undefined) return false;
    const list = Math.floor(at / 2 ** 32);
    const slot = at % 2 ** 32;
    const moved = this.lists[list]!.removeAt(slot);
    if (moved !== undefined) this.place.set(moved, at);
    this.place.delete(chunkId);
    return true;
  }

  /**
   * The best `topK` with a score of at least `minScore`, among the lists of the `probes` centroids
   * nearest to the query (all lists when probes is omitted: exact).
   */
  query(vector: Float32Array, topK: number, options: { probes?: number; minScore?: number } = {}): ScoredId[] {
    return this.queryMany([vector], topK, options)[0]!;
  }

  /**
   * Several queries, answered as `query` would. The scan goes list by list, each list for all the
   * queries that probe it, so a list's vectors are read from memory once while they are in cache.
   */
  queryMany(vectors: Float32Array[], topK: number, options: { probes?: number; minScore?: number } = {}): ScoredId[][] {
    const probes = Math.min(options.probes ?? this.lists.length, this.lists.length);
    const { dimensions, head } = this;
    const queries = vectors.map(
      (vector): Query => ({
        vector,
        top: [],
        floor: options.minScore ?? -Infinity,
        // Cauchy–Schwarz: the tail adds at most |query's tail| × |vector's tail|, so once there is a floor
        // (minScore, or a full top list) most vectors are ruled out after 3/8 of the multiplications.
        tail: Math.sqrt(dotRange(vector, vector, 0, head, dimensions)) * (1 + 1e-6) + 1e-6,
      }),
    );
    this.lastScanned = 0;
    if (topK <= 0) return queries.map((q) => q.top);
    const probing: number[][] = this.lists.map(() => []);
    let order: number[] = [];
    this.nearestLists(vectors, probes, (i, lists) => {
      order = lists;
      for (const list of lists) probing[list]!.push(i);
    });
    // One query visits its lists nearest first (its floor rises soonest); several, in list order.
    if (queries.length > 1) order = this.lists.map((_, list) => list);
    for (const list of order) {
      const asking = probing[list]!;
      const vectorList = this.lists[list]!;
      this.lastScanned += vectorList.size * asking.length;
      let i = 0;
      for (; i + LANES <= asking.length; i += LANES)
        this.scanBlock(
          vectorList,
          asking.slice(i, i + LANES).map((q) => queries[q]!),
          topK,
        );
      for (; i < asking.length; i++) {
        const q = queries[asking[i]!]!;
        for (let slot = 0; slot < vectorList.size; slot++)
          admit(q, vectorList, slot, dotRange(q.vector, vectorList.data, slot * dimensions, 0, head), head, topK, true);
      }
    }
    this.lastScanned /= Math.max(1, queries.length);
    return queries.map((q) => q.top);
  }

  /**
   * Scans one list for LANES queries at once, two vectors at a time (block-dots.ts). Each query still
   * meets the vectors in slot order, so its floor rises as it would alone and the answers are the same.
   */
  private scanBlock(vectorList: VectorList, block: Query[], topK: number): void {
    const { head, dimensions, packed, dots } = this;
    const { data, size } = vectorList;
    pack(
      packed,
      block.map((q) => q.vector),
      0,
      head,
    );
    for (let slot = 0; slot < size; slot += 2) {
      // An odd last slot is read twice; its second reading is not used.
      const second = Math.min(slot + 1, size - 1);
      dots4x2(packed, data, slot * dimensions, second * dimensions, head, dots);
      for (let k = 0; k < LANES; k++) admit(block[k]!, vectorList, slot, dots[k]!, head, topK);
      if (second === slot) break;
      for (let k = 0; k < LANES; k++) admit(block[k]!, vectorList, second, dots[LANES + k]!, head, topK);
    }
  }

  /** Calls `visit(i, lists)` with the `count` lists whose centroids are nearest to vectors[i], nearest first. */
  private nearestLists(
    vectors: readonly Float32Array[],
    count: number,
    visit: (i: number, lists: number[]) => void,
  ): void {
    if (this.lists.length === 1) {
      vectors.forEach((_, i) => visit(i, [0]));
      return;
    }
    scoreRows(vectors, this.centroids, this.dimensions, (i, scores) => {
      const best: number[] = [];
      for (let list = 0; list < scores.length; list++) {
        if (best.length === count && scores[best[count - 1]!]! >= scores[list]!) continue;
        let at = best.length;
        while (at > 0 && scores[best[at - 1]!]! < scores[list]!) at--;
        best.splice(at, 0, list);
        if (best.length > count) best.pop();
      }
      visit(i, best);
    });
  }
}

/**
 * Offers a vector to a query's top list, given the dot product of their heads (`first`). Cauchy–Schwarz
 * rules most vectors out before their tails are read; the margin covers a head summed in another order
 * (scanBlock), and a vector that passes is scored as `query` scores it (its head summed again unless
 * `exactHead`), so every path agrees.
 */
function admit(
  q: Query,
  list: VectorList,
  slot: number,
  first: number,
  head: number,
  topK: number,
  exactHead = false,
): void {
  if (first + q.tail * list.tails[slot]! + 1e-9 < q.floor) return;
  const { data, ids } = list;
  const dimensions = q.vector.length;
  const offset = slot * dimensions;
  const score =
    (exactHead ? first : dotRange(q.vector, data, offset, 0, head)) +
    dotRange(q.vector, data, offset, head, dimensions);
  const top = q.top;
  if (score < q.floor || (score === q.floor && top.length === topK)) return;
  let at = top.length;
  while (at > 0 && top[at - 1]!.score < score) at--;
  top.splice(at, 0, { chunkId: ids[slot]!, score });
  if (top.length > topK) top.pop();
  if (top.length === topK) q.floor = Math.max(q.floor, top[topK - 1]!.score);
}

/** For each vector, the index of the centroid (rows of `centroids`) with the highest dot product with it. */
function nearestOf(vectors: readonly Float32Array[], centroids: Float32Array, dimensions: number): Int32Array {
  const out = new Int32Array(vectors.length);
  scoreRows(vectors, centroids, dimensions, (i, scores) => {
    let best = 0;
    for (let list = 1; list < scores.length; list++) if (scores[list]! > scores[best]!) best = list;
    out[i] = best;
  });
  return out;
}

/** Keeps `top` sorted by score, descending, at most k long. */
export function insertTopK(top: ScoredId[], match: ScoredId, k: number): void {
  if (top.length === k && top[k - 1]!.score >= match.score) return;
  let i = top.length;
  while (i > 0 && top[i - 1]!.score < match.score) i--;
  top.splice(i, 0, match);
  if (top.length > k) top.pop();
}
