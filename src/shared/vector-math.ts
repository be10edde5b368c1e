export function normalize(v: Float32Array): Float32Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

/** Cosine of two unit vectors. */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

export function toBytes(v: Float32Array): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

export function fromBytes(bytes: ArrayBuffer | Uint8Array | number[]): Float32Array {
  const u8 =
    bytes instanceof Uint8Array ? bytes : Array.isArray(bytes) ? Uint8Array.from(bytes) : new Uint8Array(bytes);
  const copy = new Uint8Array(u8.byteLength);
  copy.set(u8);
  return new Float32Array(copy.buffer);
}

const HEX_DIGITS = new TextEncoder().encode("0123456789abcdef");
const HEX_VALUES = new Uint8Array(128);
for (let i = 0; i < 16; i++) {
  HEX_VALUES[HEX_DIGITS[i]!] = i;
  HEX_VALUES["0123456789ABCDEF".charCodeAt(i)] = i;
}
const ASCII = new TextDecoder();

/** The vector's bytes as hex text (as SQLite's hex() writes a blob and unhex() reads it back). */
export function toHex(v: Float32Array): string {
  const bytes = toBytes(v);
  const out = new Uint8Array(bytes.length * 2);
  for (let i = 0; i < bytes.length; i++) {
    out[2 * i] = HEX_DIGITS[bytes[i]! >> 4]!;
    out[2 * i + 1] = HEX_DIGITS[bytes[i]! & 15]!;
  }
  return ASCII.decode(out);
}

/** The inverse of toHex (either case). */
export function fromHex(hex: string): Float32Array {
  const bytes = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < bytes.length; i++)
    bytes[i] = (HEX_VALUES[hex.charCodeAt(2 * i)]! << 4) | HEX_VALUES[hex.charCodeAt(2 * i + 1)]!;
  return new Float32Array(bytes.buffer, 0, bytes.length >> 2);
}
