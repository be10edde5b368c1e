/**
 * A BPE rank table in the binary layout written by scripts/build-token-tables.mjs from js-tiktoken's
 * rank files. Loading makes typed-array views over the bytes plus two small derived arrays, so a
 * 200k-token table is ready in milliseconds and costs little more than its own size in memory
 * (js-tiktoken's constructor decodes every token from base64 into a Map of strings: ~1 s, ~100 MB).
 */

const MAGIC = "CETT";
const FORMAT = 1;
const NOT_FOUND = -1;

interface TableHeader {
  format: number;
  encoding: string;
  patStr: string;
  tokenCount: number;
  sortedCount: number;
  specialTokens: Record<string, number>;
}

export class TokenTable {
  readonly encoding: string;
  /** The pre-tokenizer regex source, exactly as in js-tiktoken's rank file. */
  readonly patStr: string;
  readonly specialTokens: Readonly<Record<string, number>>;
  private readonly lengths: Uint8Array;
  /** Start of each rank's bytes in `bytes` (derived from lengths at load). */
  private readonly offsets: Uint32Array;
  /** Ranks ordered by their bytes, for binary search. */
  private readonly sorted: Uint32Array;
  /** Where the ranks starting with each byte value begin in `sorted` (257 entries). */
  private readonly firstByteStart: Uint32Array;
  private readonly bytes: Uint8Array;

  constructor(buffer: ArrayBuffer) {
    const view = new DataView(buffer);
    const magic = String.fromCharCode(view.getUint8(0), view.getUint8(1), view.getUint8(2), view.getUint8(3));
    if (magic !== MAGIC) throw new Error("Token table: not a table written by scripts/build-token-tables.mjs");
    const headerLength = view.getUint32(4, true);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, headerLength))) as TableHeader;
    if (header.format !== FORMAT) throw new Error(`Token table: format ${header.format}, expected ${FORMAT}; rerun scripts/build-token-tables.mjs`);
    this.encoding = header.encoding;
    this.patStr = header.patStr;
    this.specialTokens = header.specialTokens;

    const lengthsAt = 8 + headerLength;
    const sortedAt = lengthsAt + pad4(header.tokenCount);
    const bytesAt = sortedAt + 4 * header.tokenCount;
    this.lengths = new Uint8Array(buffer, lengthsAt, header.tokenCount);
    this.sorted = new Uint32Array(buffer, sortedAt, header.sortedCount);
    this.bytes = new Uint8Array(buffer, bytesAt);

    this.offsets = new Uint32Array(header.tokenCount + 1);
    for (let rank = 0; rank < header.tokenCount; rank++) this.offsets[rank + 1] = this.offsets[rank]! + this.lengths[rank]!;
    if (this.offsets[header.tokenCount] !== this.bytes.length) throw new Error("Token table: truncated");

    this.firstByteStart = new Uint32Array(257);
    let position = 0;
    for (let byte = 0; byte < 256; byte++) {
      this.firstByteStart[byte] = position;
      while (position < this.sorted.length && this.bytes[this.offsets[this.sorted[position]!]!] === byte) position++;
    }
    this.firstByteStart[256] = position;
  }

  /** The rank of key[start, end), or -1 when no token has exactly those bytes. */
  rankOf(key: Uint8Array, start: number, end: number): number {
    const first = key[start]!;
    let lo = this.firstByteStart[first]!;
    let hi = this.firstByteStart[first + 1]!;
    const length = end - start;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const rank = this.sorted[mid]!;
      const order = this.compare(rank, key, start, length);
      if (order === 0) return rank;
      if (order < 0) lo = mid + 1;
      else hi = mid;
    }
    return NOT_FOUND;
  }

  /** The bytes of a rank, or undefined for a rank with no token. */
  bytesOf(rank: number): Uint8Array | undefined {
    const length = this.lengths[rank];
    if (!length) return undefined;
    const at = this.offsets[rank]!;
    return this.bytes.subarray(at, at + length);
  }

  /** Byte order of a rank's token against key[start, start + length); all share the first byte. */
  private compare(rank: number, key: Uint8Array, start: number, length: number): number {
    const at = this.offsets[rank]!;
    const tokenLength = this.lengths[rank]!;
    const n = Math.min(tokenLength, length);
    for (let i = 1; i < n; i++) {
      const difference = this.bytes[at + i]! - key[start + i]!;
      if (difference !== 0) return difference;
    }
    return tokenLength - length;
  }
}

export const TOKEN_NOT_FOUND = NOT_FOUND;

function pad4(n: number): number {
  return (n + 3) & ~3;
}
