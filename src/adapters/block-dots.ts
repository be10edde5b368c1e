/**
 * Dot products in blocks: four vectors against two stored vectors at a time. Each value read serves
 * eight products and V8 keeps the eight sums in registers, so a block reads memory far less often than the
 * same products computed one dot product at a time. Every sum adds its terms in dimension order, one after
 * another, so a vector's results do not depend on the vectors it shares a block with.
 */

/** Vectors in a block. */
export const LANES = 4;

/**
 * Interleaves vectors[first ..] over dimensions [0, to) into `packed` (dimension d of lane k at
 * d * LANES + k); lanes past the end repeat the last vector. Returns how many lanes hold real vectors.
 */
export function pack(packed: Float64Array, vectors: readonly Float32Array[], first: number, to: number): number {
  const lanes = Math.min(LANES, vectors.length - first);
  for (let k = 0; k < LANES; k++) {
    const vector = vectors[first + Math.min(k, lanes - 1)]!;
    for (let d = 0; d < to; d++) packed[d * LANES + k] = vector[d]!;
  }
  return lanes;
}

/**
 * The packed vectors' dot products over [0, to) with the vectors at offsets `a` and `b` of `data`:
 * lane k's with the first in out[k], with the second in out[LANES + k].
 */
export function dots4x2(
  packed: Float64Array,
  data: Float32Array,
  a: number,
  b: number,
  to: number,
  out: Float64Array,
): void {
  let a0 = 0,
    a1 = 0,
    a2 = 0,
    a3 = 0,
    b0 = 0,
    b1 = 0,
    b2 = 0,
    b3 = 0;
  for (let d = 0; d < to; d++) {
    const x = data[a + d]!;
    const y = data[b + d]!;
    const e = d * LANES;
    const c0 = packed[e]!,
      c1 = packed[e + 1]!,
      c2 = packed[e + 2]!,
      c3 = packed[e + 3]!;
    a0 += c0 * x;
    a1 += c1 * x;
    a2 += c2 * x;
    a3 += c3 * x;
    b0 += c0 * y;
    b1 += c1 * y;
    b2 += c2 * y;
    b3 += c3 * y;
  }
  out[0] = a0;
  out[1] = a1;
  out[2] = a2;
  out[3] = a3;
  out[4] = b0;
  out[5] = b1;
  out[6] = b2;
  out[7] = b3;
}

/**
 * Calls `visit(i, scores)` for each vector, scores[r] being its dot product with row r of `rows`
 * (rows of `dimensions` values, back to back). `scores` is reused between calls: copy what you keep.
 */
export function scoreRows(
  vectors: readonly Float32Array[],
  rows: Float32Array,
  dimensions: number,
  visit: (i: number, scores: Float64Array) => void,
): void {
  const count = Math.floor(rows.length / dimensions);
  const packed = new Float64Array(LANES * dimensions);
  const scores = Array.from({ length: LANES }, () => new Float64Array(count));
  const out = new Float64Array(2 * LANES);
  for (let first = 0; first < vectors.length; first += LANES) {
    const lanes = pack(packed, vectors, first, dimensions);
    for (let r = 0; r < count; r += 2) {
      const second = Math.min(r + 1, count - 1);
      dots4x2(packed, rows, r * dimensions, second * dimensions, dimensions, out);
      for (let k = 0; k < LANES; k++) {
        scores[k]![r] = out[k]!;
        scores[k]![second] = second === r ? out[k]! : out[LANES + k]!;
      }
    }
    for (let k = 0; k < lanes; k++) visit(first + k, scores[k]!);
  }
}
