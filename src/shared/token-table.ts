/**
 * A BPE rank table in the binary layout written by scripts/build-token-tables.mjs from js-tiktoken's
 * rank files. Loading only makes typed-array views over the bytes (offsets and the search index are
 * stored, not derived), so a 200k-token table is ready at once and costs its own size in memory
 * (js-tiktoken's constructor decodes every token from base64 into a Map of strings, slow to build and large).
 */

const MAGIC = "CETT";
const FORMAT = 2;
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
  /** Rank r's bytes are bytes[offsets[r], offsets[r + 1]); empty for a rank with no token. */
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
    if (header.format !== FORMAT)
      throw new Error(`Token table: format ${header.format}, expected ${FORMAT}; rerun scripts/build-token-tables.mjs`);
    this.encoding = header.encoding;
    this.patStr = header.patStr;
    this.specialTokens = header.specialTokens;

    const offsetsAt = 8 + headerLength;
    const firstByteAt = offsetsAt + 4 * (header.tokenCount + 1);
    const sortedAt = firstByteAt + 4 * 257;
    const bytesAt = sortedAt + 4 * header.sortedCount;
    this.offsets = new Uint32Array(buffer, offsetsAt, header.tokenCount + 1);
    this.firstByteStart = new Uint32Array(buffer, firstByteAt, 257);
    this.sorted = new Uint32Array(buffer, sortedAt, header.sortedCount);
    this.bytes = new Uint8Array(buffer, bytesAt);
    if (this.offsets[header.tokenCount] !== this.bytes.length) throw new Error("Token table: truncated");
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
    if (!(rank >= 0 && rank < this.offsets.length - 1)) return undefined;
    const at = this.offsets[rank]!;
    const end = this.offsets[rank + 1]!;
    return end > at ? this.bytes.subarray(at, end) : undefined;
  }

  /** Byte order of a rank's token against key[start, start + length); all share the first byte. */
  private compare(rank: number, key: Uint8Array, start: number, length: number): number {
    const at = this.offsets[rank]!;
    const tokenLength = this.offsets[rank + 1]! - at;
    const n = Math.min(tokenLength, length);
    for (let i = 1; i < n; i++) {
      const difference = this.bytes[at + i]! - key[start + i]!;
      if (difference !== 0) return difference;
    }
    return tokenLength - length;
  }
}

export const TOKEN_NOT_FOUND = NOT_FOUND;
