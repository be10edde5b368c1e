import { describe, expect, it } from "vitest";
import { dots4x2, LANES, pack, scoreRows } from "../../src/adapters/block-dots";

// Blocked dot products must give every vector the sums it would get alone, in dimension order, whatever
// shares its block: search's single queries and auto-link's batches then rank alike.

/** Deterministic pseudo-random float32 vectors (a linear congruential generator). */
function vectors(count: number, dimensions: number, seed: number): Float32Array[] {
  let x = seed;
  const next = () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
  return Array.from({ length: count }, () => Float32Array.from({ length: dimensions }, next));
}

/** The dot product summed one term after another, in dimension order. */
function inOrder(a: Float32Array, b: Float32Array, to = a.length): number {
  let sum = 0;
  for (let d = 0; d < to; d++) sum += a[d]! * b[d]!;
  return sum;
}

describe("block dot products", () => {
  const dimensions = 37; // odd, so no dimension count hides a remainder
  const rows = vectors(7, dimensions, 1); // odd: the last row has no partner
  const flat = new Float32Array(rows.length * dimensions);
  rows.forEach((r, i) => flat.set(r, i * dimensions));

  it("scores every vector against every row exactly as one sum in dimension order", () => {
    const queries = vectors(10, dimensions, 2); // two blocks and two left over
    const seen: number[] = [];
    scoreRows(queries, flat, dimensions, (i, scores) => {
      seen.push(i);
      expect([...scores]).toEqual(rows.map((r) => inOrder(queries[i]!, r)));
    });
    expect(seen).toEqual(queries.map((_, i) => i));
  });

  it("gives a vector the same bits alone as in any block", () => {
    const queries = vectors(5, dimensions, 3);
    const alone: number[][] = [];
    for (const q of queries) scoreRows([q], flat, dimensions, (_, scores) => alone.push([...scores]));
    const together: number[][] = [];
    scoreRows([...queries].reverse(), flat, dimensions, (_, scores) => together.unshift([...scores]));
    expect(together).toEqual(alone);
  });

  it("sums a prefix of the dimensions for four vectors against two rows", () => {
    const queries = vectors(LANES, dimensions, 4);
    const packed = new Float64Array(LANES * dimensions);
    expect(pack(packed, queries, 0, 11)).toBe(LANES);
    const out = new Float64Array(2 * LANES);
    dots4x2(packed, flat, 2 * dimensions, 5 * dimensions, 11, out);
    expect([...out]).toEqual([
      ...queries.map((q) => inOrder(q, rows[2]!, 11)),
      ...queries.map((q) => inOrder(q, rows[5]!, 11)),
    ]);
    expect(pack(packed, queries.slice(0, 3), 1, 11)).toBe(2); // lanes past the end repeat the last vector
  });
});
