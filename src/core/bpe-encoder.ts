import { TOKEN_NOT_FOUND, type TokenTable } from "./token-table";

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
  /** UTF-8 of the current piece, reused across pieces (grown when a piece needs more). */
  private scratch = new Uint8Array(1024);

  constructor(private readonly table: TokenTable) {
    this.pattern = new RegExp(table.patStr, "gu");
    for (const [text, rank] of Object.entries(table.specialTokens)) this.specialBytes.set(rank, this.encoder.encode(text));
  }

  encode(text: string): number[] {
    const tokens: number[] = [];
    for (const match of text.matchAll(this.pattern)) this.encodePiece(match[0], tokens);
    return tokens;
  }

  count(text: string): number {
    let count = 0;
    for (const match of text.matchAll(this.pattern)) count += this.encodePiece(match[0], null);
    return count;
  }

  /** Like js-tiktoken's decode: unknown ranks are skipped, invalid UTF-8 becomes U+FFFD. */
  decode(tokens: number[]): string {
    const parts: Uint8Array[] = [];
    let length = 0;
    for (const rank of tokens) {
      const bytes = this.table.bytesOf(rank) ?? this.specialBytes.get(rank);
      if (bytes) (parts.push(bytes), (length += bytes.length));
    }
    const joined = new Uint8Array(length);
    let at = 0;
    for (const bytes of parts) (joined.set(bytes, at), (at += bytes.length));
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
    const bounds = this.mergedBounds(this.scratch, length);
    if (out) for (let i = 0; i + 1 < bounds.length; i++) out.push(this.table.rankOf(this.scratch, bounds[i]!, bounds[i + 1]!));
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

  private pairRank(bytes: Uint8Array, start: number, end: number): number {
    const rank = this.table.rankOf(bytes, start, end);
    return rank === TOKEN_NOT_FOUND ? Infinity : rank;
  }
}
