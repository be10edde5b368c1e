import { Tiktoken } from "js-tiktoken/lite";

/** Encodings we ship. Ranks are imported on first use, so an isolate loads only the one it needs. */
const RANKS = {
  o200k_base: () => import("js-tiktoken/ranks/o200k_base"),
  cl100k_base: () => import("js-tiktoken/ranks/cl100k_base"),
} as const;

export type TokenEncoding = keyof typeof RANKS;
export const TOKEN_ENCODINGS = Object.keys(RANKS) as TokenEncoding[];

export interface TokenCounter {
  readonly encoding: TokenEncoding;
  count(text: string): number;
  encode(text: string): number[];
  decode(tokens: number[]): string;
}

const counters = new Map<TokenEncoding, Promise<TokenCounter>>();

export function isTokenEncoding(value: string): value is TokenEncoding {
  return value in RANKS;
}

/** The js-tiktoken counter for an encoding, built once per isolate. */
export function tokenCounter(encoding: TokenEncoding): Promise<TokenCounter> {
  let counter = counters.get(encoding);
  if (!counter) {
    counter = RANKS[encoding]().then(({ default: ranks }) => {
      const tiktoken = new Tiktoken(ranks);
      return {
        encoding,
        count: (text: string) => (text.length === 0 ? 0 : tiktoken.encode(text).length),
        encode: (text: string) => tiktoken.encode(text),
        decode: (tokens: number[]) => tiktoken.decode(tokens),
      };
    });
    counters.set(encoding, counter);
  }
  return counter;
}
