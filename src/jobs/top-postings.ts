import { shardDatabase, shardNames } from "../control/shards";
import { refreshTopPostings, TOP_TERMS_PER_PASS } from "../core/keyword-index/tops";
import type { Env } from "../env";
import type { MinuteStates } from "./minute-state";

/**
 * Every minute, after the lost-job pass: builds the keyword top postings that are due on each shard
 * (src/core/keyword-index/tops.ts), deciding from the minute state where given (minute-state.ts). A shard that fails
 * is retried by the next pass; until a word has its list, searches read the word's every posting, so nothing is missed
 * meanwhile.
 */
export async function refreshAllTopPostings(env: Env, now = Date.now(), states?: MinuteStates): Promise<number> {
  let built = 0;
  for (const shard of shardNames(env)) {
    try {
      const d1 = shardDatabase(env, shard);
      const marks = states ? (await states.of(d1, shard)).marks : undefined;
      built += await refreshTopPostings(d1, now, TOP_TERMS_PER_PASS, marks);
    } catch (error) {
      console.error(`top postings pass of shard ${shard} failed; the next pass retries`, error);
    }
  }
  return built;
}
