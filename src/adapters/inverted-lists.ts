import { dot } from "../core/shared/vector-math";

export interface ScoredId {
  chunkId: number;
  score: number;
}

/**
 * An inverted-file index over unit vectors (the way approximate indexes such as Vectorize avoid
 * scanning everything): vectors are grouped under about √N centroids found by spherical k-means, and a
 * query scans only the lists of its nearest centroids. So a query costs about √N + N·probe/√N dot
 * products instead of N. Vectors join the nearest list as they arrive; the owner rebuilds the lists
 * when the collection has doubled, so the centroids keep up with the data.
 */
export class InvertedLists {
  private centroids: Float32Array[] = [];
  private lists: number[][] = [];
  private readonly listOf = new Map<number, number>();
  private readonly vectors = new Map<number, Float32Array>();
  /** Size of the collection the centroids were computed from. */
  readonly builtFor: number;
  /** Vectors the last query compared (what a query costs; the tests hold it well under N). */
  lastScanned = 0;

  constructor(vectors: Map<number, Float32Array>) {
    this.builtFor = vectors.size;
    const ids = [...vectors.keys()];
    const k = Math.max(1, Math.round(Math.sqrt(ids.length)));
    // Evenly spaced seeds (deterministic), then one refinement: assign, move each centroid to the mean.
    this.centroids = Array.from({ length: k }, (_, i) => Float32Array.from(vectors.get(ids[Math.floor((i * ids.length) / k)]!)!));
    const assignment = ids.map((id) => this.nearestList(vectors.get(id)!));
    const sums = this.centroids.map((c) => new Float32Array(c.length));
    ids.forEach((id, i) => {
      const v = vectors.get(id)!;
      const sum = sums[assignment[i]!]!;
      for (let d = 0; d < v.length; d++) sum[d]! += v[d]!;
    });
    sums.forEach((sum, list) => {
      const norm = Math.sqrt(dot(sum, sum));
      if (norm > 0) this.centroids[list] = sum.map((x) => x / norm);
    });
    this.lists = this.centroids.map(() => []);
    for (const [id, v] of vectors) this.add(id, v);
  }

  get size(): number {
    return this.vectors.size;
  }

  /**
   * Lists a query scans: a sixth of them (at least 4). On 5,000 MS MARCO passages that compares 18% of
   * the vectors and finds 98.6% of the exact top-20 neighbours at similarity ≥ 0.5 (87% of all 20).
   */
  get probes(): number {
    return Math.max(4, Math.ceil(this.centroids.length / 6));
  }

  /** Adds a vector, or moves it when it was rewritten. */
  add(chunkId: number, vector: Float32Array): void {
    const previous = this.listOf.get(chunkId);
    if (previous !== undefined) {
      const members = this.lists[previous]!;
      members.splice(members.indexOf(chunkId), 1);
    }
    const list = this.nearestList(vector);
    this.lists[list]!.push(chunkId);
    this.listOf.set(chunkId, list);
    this.vectors.set(chunkId, vector);
  }

  /** The best `topK` among the lists of the `probes` centroids nearest to the query. */
  query(vector: Float32Array, topK: number, probes: number): ScoredId[] {
    const ranked = this.centroids.map((c, list) => ({ list, score: dot(vector, c) })).sort((a, b) => b.score - a.score);
    const top: ScoredId[] = [];
    this.lastScanned = 0;
    for (const { list } of ranked.slice(0, probes)) {
      for (const chunkId of this.lists[list]!) insertTopK(top, { chunkId, score: dot(vector, this.vectors.get(chunkId)!) }, topK);
      this.lastScanned += this.lists[list]!.length;
    }
    return top;
  }

  private nearestList(vector: Float32Array): number {
    let best = 0;
    let bestScore = -Infinity;
    this.centroids.forEach((c, list) => {
      const score = dot(vector, c);
      if (score > bestScore) {
        best = list;
        bestScore = score;
      }
    });
    return best;
  }
}

/** Keeps `top` sorted by score, descending, at most k long. */
export function insertTopK(top: ScoredId[], match: ScoredId, k: number): void {
  if (top.length === k && top[k - 1]!.score >= match.score) return;
  let i = top.length;
  while (i > 0 && top[i - 1]!.score < match.score) i--;
  top.splice(i, 0, match);
  if (top.length > k) top.pop();
}
