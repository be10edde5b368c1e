import type { TokenEncoding } from "../token-encodings";
import { BpeEncoder } from "./bpe-encoder";
import { TokenTable } from "./token-table";

export interface TokenCounter {
  readonly encoding: TokenEncoding;
  count(text: string): number;
  encode(text: string): number[];
  decode(tokens: number[]): string;
}

/** Where an encoding's table bytes come from: the ASSETS binding in the Worker, files in Node. */
export type TokenTableSource = (encoding: TokenEncoding) => Promise<ArrayBuffer>;

const counters = new Map<TokenEncoding, Promise<TokenCounter>>();

/** The counter for an encoding, built once per isolate from the table `source` gives. */
export function tokenCounter(encoding: TokenEncoding, source: TokenTableSource): Promise<TokenCounter> {
  let counter = counters.get(encoding);
  if (!counter) {
    counter = source(encoding).then((buffer) => counterFromTable(encoding, buffer));
    // A failed load (e.g. a missing asset) is retried by the next call instead of being cached.
    counter.catch(() => counters.delete(encoding));
    counters.set(encoding, counter);
  }
  return counter;
}

export function counterFromTable(encoding: TokenEncoding, buffer: ArrayBuffer): TokenCounter {
  const table = new TokenTable(buffer);
  if (table.encoding !== encoding) throw new Error(`Token table for ${encoding} holds ${table.encoding}`);
  const encoder = new BpeEncoder(table);
  return {
    encoding,
    count: (text: string) => encoder.count(text),
    encode: (text: string) => encoder.encode(text),
    decode: (tokens: number[]) => encoder.decode(tokens),
  };
}
