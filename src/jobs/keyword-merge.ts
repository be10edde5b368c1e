import { shardDatabase, shardNames } from "../control/shards";
import { MERGE_PAGES, mergeKeywordSegments } from "../core/keyword-index/segments";
import type { Env } from "../env";
import type { MinuteStates } from "./minute-state";

/**
 * Every minute, after the top postings: merges each shard's keyword index segments when due
 * (src/core/keyword-index/segments.ts), deciding from the minute state where given (minute-state.ts); returns how many
 * shards it merged. Searches read the same results either way, only faster once merged, so a shard that fails is
 * logged and left to the next pass.
 */
export async function mergeAllKeywordSegments(env: Env, states?: MinuteStates): Promise<number> {
  let merged = 0;
  for (const shard of shardNames(env)) {
    try {
      const d1 = shardDatabase(env, shard);
      const marks = states ? (await states.of(d1, shard)).marks : undefined;
      if ((await mergeKeywordSegments(d1, MERGE_PAGES, marks)) > 0) merged++;
    } catch (error) {
      console.error(`keyword index merge of shard ${shard} failed; the next pass retries`, error);
    }
  }
  return merged;
}
