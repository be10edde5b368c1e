/**
 * Encodings we ship. Their rank tables are prebuilt from js-tiktoken's (scripts/build-token-tables.mjs)
 * and counts are identical to js-tiktoken's; an isolate loads only the configured table, at first use.
 */
export const TOKEN_ENCODINGS = ["o200k_base", "cl100k_base"] as const;

export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];

export function isTokenEncoding(value: string): value is TokenEncoding {
  return (TOKEN_ENCODINGS as readonly string[]).includes(value);
}
