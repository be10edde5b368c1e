import { shardDatabase, shardNames } from "../control/shards";
import { refreshTopPostings } from "../core/keyword-index/tops";
import type { Env } from "../env";

/**
 * Every minute, after the lost-job pass: builds the keyword top postings that are due on each shard
 * (src/core/keyword-index/tops.ts). A shard that fails is retried by the next pass; until a word has its list,
 * searches read the word's every posting, so nothing is missed meanwhile.
 */
export async function refreshAllTopPostings(env: Env, now = Date.now()): Promise<number> {
  let built = 0;
  for (const shard of shardNames(env)) {
    try {
      built += await refreshTopPostings(shardDatabase(env, shard), now);
    } catch (error) {
      console.error(`top postings pass of shard ${shard} failed; the next pass retries`, error);
    }
  }
  return built;
}
