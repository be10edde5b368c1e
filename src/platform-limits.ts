/**
 * The platform limits the checked bindings enforce (src/checked-env.ts) and the adapters stay under, with
 * their sources. docs/limits.md lists each with where it is enforced and its test.
 */
import { utf8Bytes } from "./shared/utf8";

export { utf8Bytes };

export const PLATFORM_LIMITS = {
  /** developers.cloudflare.com/d1/platform/limits */
  d1: {
    boundParameters: 100,
    statementBytes: 100_000,
    /** A string, BLOB or row. */
    valueBytes: 2_000_000,
    /** Arguments of one SQL function call. */
    functionArguments: 32,
    /** A LIKE or GLOB pattern, in bytes (local SQLite in workerd refuses longer ones itself). */
    likePatternBytes: 50,
    /** One query or batch ("Maximum SQL query duration"). */
    queryMs: 30_000,
  },
  /** developers.cloudflare.com/kv/platform/limits, /kv/api/write-key-value-pairs */
  kv: {
    keyBytes: 512,
    valueBytes: 25 * 1024 * 1024,
    metadataBytes: 1024,
    minTtlSeconds: 60,
  },
  /** developers.cloudflare.com/queues/platform/limits (KB read as 1,000 bytes: the stricter reading) */
  queues: {
    messageBytes: 128_000,
    batchMessages: 100,
    batchBytes: 256_000,
    /** The longest a message can be delayed (delaySeconds), 12 hours. */
    maxDelaySeconds: 43_200,
  },
} as const;

/** Whether a string is at most `limit` UTF-8 bytes (short strings are not walked). */
export function fitsUtf8(text: string, limit: number): boolean {
  return text.length * 3 <= limit || (text.length <= limit && utf8Bytes(text) <= limit);
}
