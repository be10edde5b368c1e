import { TOKEN_NOT_FOUND, type TokenTable } from "./token-table";

/** Pieces longer than this merge with a heap: the simple scan is quadratic, and a long CJK run is one piece. */
const LONG_PIECE_BYTES = 256;
/** Pieces per generation of count()'s cache (two generations: at most 100k short strings). */
const PIECE_CACHE_GENERATION = 50_000;
/**
 * Longer pieces are not remembered: V8 copies a substring shorter than 13 characters but makes a longer
 * one a slice that keeps its whole source text alive, and long pieces are rare words anyway.
 */
const PIECE_CACHE_MAX_LENGTH = 12;
/** Heap keys pack (rank, start) into one number: lower rank first, then the leftmost pair. */
const START_SPAN = 2 ** 24;

/**
 * tiktoken's encoding over a prebuilt TokenTable: the same regex pre-tokenizer split and the same
 * byte-pair merge rule (repeatedly merge the adjacent pair whose bytes have the lowest rank, the
 * leftmost on ties), so tokens are identical to js-tiktoken's `encode(text, [], [])`. Special-token
 * text such as "<|endoftext|>" is plain text here (js-tiktoken's default `encode(text)` throws on it).
 */
export class BpeEncoder {
  private readonly pattern: RegExp;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder("utf-8");
  private readonly specialBytes = new Map<number, Uint8Array>();
  /**
   * Tokens per piece already counted: words repeat (Zipf), so most pieces skip UTF-8 encoding and
   * merging. Two generations make a cheap LRU: when the recent one fills it becomes the older one,
   * so pieces in use survive and the rest age out.
   */
  private recentCounts = new Map<string, number>();
  private olderCounts = new Map<string, number>();
  /** UTF-8 of the current piece, reused across pieces (grown when a piece needs more). */
  private scratch = new Uint8Array(1024);

  constructor(private readonly table: TokenTable) {
    this.pattern = new RegExp(table.patStr, "gu");
    for (const [text, rank] of Object.entries(table.specialTokens))
      this.specialBytes.set(rank, this.encoder.encode(text));
  }

  encode(text: string): number[] {
    const tokens: number[] = [];
    for (const match of text.matchAll(this.pattern)) this.encodePiece(match[0], tokens);
    return tokens;
  }

  count(text: string): number {
    let count = 0;
    for (const match of text.matchAll(this.pattern)) {
      const piece = match[0];
      let n = this.recentCounts.get(piece);
      if (n === undefined) {
        n = this.olderCounts.get(piece) ?? this.encodePiece(piece, null);
        if (piece.length <= PIECE_CACHE_MAX_LENGTH) this.rememberCount(piece, n);
      }
      count += n;
    }
    return count;
  }

  private rememberCount(piece: string, n: number): void {
    if (this.recentCounts.size >= PIECE_CACHE_GENERATION) {
      this.olderCounts = this.recentCounts;
      this.recentCounts = new Map();
    }
    this.recentCounts.set(piece, n);
  }

  /** Like js-tiktoken's decode: unknown ranks are skipped, invalid UTF-8 becomes U+FFFD. */
  decode(tokens: number[]): string {
    const parts: Uint8Array[] = [];
    let length = 0;
    for (const rank of tokens) {
      const bytes = this.table.bytesOf(rank) ?? this.specialBytes.get(rank);
      if (bytes) parts.push(bytes), (length += bytes.length);
    }
    const joined = new Uint8Array(length);
    let at = 0;
    for (const bytes of parts) joined.set(bytes, at), (at += bytes.length);
    return this.decoder.decode(joined);
  }

  /** Appends the piece's tokens to `out` (when given) and returns how many there are. */
  private encodePiece(piece: string, out: number[] | null): number {
    // UTF-8 takes at most 3 bytes per UTF-16 unit; lone surrogates become U+FFFD, as with encode().
    if (this.scratch.length < piece.length * 3) this.scratch = new Uint8Array(piece.length * 3);
    const length = this.encoder.encodeInto(piece, this.scratch).written;
    const whole = this.table.rankOf(this.scratch, 0, length);
    if (whole !== TOKEN_NOT_FOUND) {
      out?.push(whole);
      return 1;
    }
    const bounds =
      length > LONG_PIECE_BYTES ? this.mergedBoundsLong(this.scratch, length) : this.mergedBounds(this.scratch, length);
    if (out)
      for (let i = 0; i + 1 < bounds.length; i++) out.push(this.table.rankOf(this.scratch, bounds[i]!, bounds[i + 1]!));
    return bounds.length - 1;
  }

  /**
   * Token boundaries of bytes[0, length) after byte-pair merging (tiktoken's `_byte_pair_merge`):
   * pairRank[i] is the rank of the bytes from bounds[i] to bounds[i + 2], kept up to date around each merge.
   */
  private mergedBounds(bytes: Uint8Array, length: number): number[] {
    const bounds: number[] = [];
    const pairRank: number[] = [];
    for (let i = 0; i <= length; i++) bounds.push(i);
    const rankAt = (i: number) => (i + 2 < bounds.length ? this.pairRank(bytes, bounds[i]!, bounds[i + 2]!) : Infinity);
    for (let i = 0; i + 1 < bounds.length; i++) pairRank.push(rankAt(i));
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < pairRank.length; i++) {
        if (pairRank[i]! < bestRank) (bestRank = pairRank[i]!), (best = i);
      }
      if (best < 0) return bounds;
      bounds.splice(best + 1, 1);
      pairRank.splice(best + 1, 1);
      pairRank[best] = rankAt(best);
      if (best > 0) pairRank[best - 1] = rankAt(best - 1);
    }
  }

  /**
   * The same merges as mergedBounds in O(n log n): parts form a linked list of byte starts, and a heap holds
   * candidate pairs keyed by (rank, start). An entry is current while its part is alive and still has that
   * pair rank; the smallest current entry is exactly the pair the scan would pick (lowest rank, leftmost).
   */
  private mergedBoundsLong(bytes: Uint8Array, length: number): number[] {
    if (length >= START_SPAN) throw new Error("Token counting: piece too long");
    const next = new Int32Array(length);
    const previous = new Int32Array(length);
    const alive = new Uint8Array(length).fill(1);
    const pairRank = new Float64Array(length);
    for (let i = 0; i < length; i++) (next[i] = i + 1), (previous[i] = i - 1); // next = length: the end
    const heap: number[] = [];
    const rankFrom = (i: number) => {
      const second = next[i]!;
      if (second >= length) return Infinity;
      return this.pairRank(bytes, i, next[second]!);
    };
    const consider = (i: number) => {
      const rank = rankFrom(i);
      pairRank[i] = rank;
      if (rank !== Infinity) heapPush(heap, rank * START_SPAN + i);
    };
    for (let i = 0; i < length; i++) consider(i);
    while (heap.length > 0) {
      const key = heapPop(heap);
      const i = key % START_SPAN;
      if (!alive[i] || pairRank[i]! * START_SPAN + i !== key) continue; // stale entry
      const merged = next[i]!;
      alive[merged] = 0;
      next[i] = next[merged]!;
      if (next[i]! < length) previous[next[i]!] = i;
      consider(i);
      if (i > 0) consider(previous[i]!);
    }
    const bounds: number[] = [];
    for (let i = 0; i < length; i = next[i]!) bounds.push(i);
    bounds.push(length);
    return bounds;
  }

  private pairRank(bytes: Uint8Array, start: number, end: number): number {
    const rank = this.table.rankOf(bytes, start, end);
    return rank === TOKEN_NOT_FOUND ? Infinity : rank;
  }
}

function heapPush(heap: number[], key: number): void {
  let i = heap.push(key) - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]! <= key) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = key;
}

function heapPop(heap: number[]): number {
  const top = heap[0]!;
  const last = heap.pop()!;
  if (heap.length > 0) {
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const child = left + 1 < heap.length && heap[left + 1]! < heap[left]! ? left + 1 : left;
      if (heap[child]! >= last) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
  return top;
}
