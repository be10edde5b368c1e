// One inverted list's vectors, stored back to back (inverted-lists.ts keeps one per centroid).

/** One list's vectors back to back in one array, so a scan is a tight loop with no lookup per vector. */
export class VectorList {
  ids: Float64Array;
  data: Float32Array;
  /** Norm of each vector's tail (its dimensions from `head` on): bounds what the tail can add to a dot product. */
  tails: Float32Array;
  size = 0;

  constructor(
    private readonly dimensions: number,
    private readonly head: number,
    capacity: number,
  ) {
    this.ids = new Float64Array(capacity);
    this.data = new Float32Array(capacity * dimensions);
    this.tails = new Float32Array(capacity);
  }

  /** Appends a vector (copied); returns its slot. */
  push(chunkId: number, vector: Float32Array): number {
    if (this.size === this.ids.length) {
      const capacity = Math.ceil(this.ids.length * 1.5) + 8;
      const ids = new Float64Array(capacity);
      ids.set(this.ids);
      this.ids = ids;
      const data = new Float32Array(capacity * this.dimensions);
      data.set(this.data);
      this.data = data;
      const tails = new Float32Array(capacity);
      tails.set(this.tails);
      this.tails = tails;
    }
    this.ids[this.size] = chunkId;
    this.data.set(vector, this.size * this.dimensions);
    this.tails[this.size] = Math.sqrt(dotRange(vector, vector, 0, this.head, this.dimensions));
    return this.size++;
  }

  /** Removes a slot by moving the last vector into it; returns the moved vector's id (undefined if none moved). */
  removeAt(slot: number): number | undefined {
    const last = --this.size;
    if (slot === last) return undefined;
    this.ids[slot] = this.ids[last]!;
    this.tails[slot] = this.tails[last]!;
    this.data.copyWithin(slot * this.dimensions, last * this.dimensions, (last + 1) * this.dimensions);
    return this.ids[slot];
  }

  vector(slot: number): Float32Array {
    return this.data.subarray(slot * this.dimensions, (slot + 1) * this.dimensions);
  }
}

/** Dot product of a[from..to) with the same dimensions of the vector at `offset` in `data` (four sums: fewer dependent additions). */
export function dotRange(a: Float32Array, data: Float32Array, offset: number, from: number, to: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let d = from;
  for (; d + 3 < to; d += 4) {
    s0 += a[d]! * data[offset + d]!;
    s1 += a[d + 1]! * data[offset + d + 1]!;
    s2 += a[d + 2]! * data[offset + d + 2]!;
    s3 += a[d + 3]! * data[offset + d + 3]!;
  }
  for (; d < to; d++) s0 += a[d]! * data[offset + d]!;
  return s0 + s1 + s2 + s3;
}
