import { shardDatabase, shardNames } from "../control/shards";
import { mergeKeywordSegments } from "../core/keyword-index/segments";
import type { Env } from "../env";

/**
 * Every minute, after the top postings: merges each shard's keyword index segments when due
 * (src/core/keyword-index/segments.ts); returns how many shards it merged. Searches read the same results either
 * way, only faster once merged, so a shard that fails is logged and left to the next pass.
 */
export async function mergeAllKeywordSegments(env: Env): Promise<number> {
  let merged = 0;
  for (const shard of shardNames(env)) {
    try {
      if ((await mergeKeywordSegments(shardDatabase(env, shard))) > 0) merged++;
    } catch (error) {
      console.error(`keyword index merge of shard ${shard} failed; the next pass retries`, error);
    }
  }
  return merged;
}
