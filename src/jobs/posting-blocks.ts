import { shardDatabase, shardNames } from "../control/shards";
import { refreshPostingBlocks } from "../core/keyword-index/block-pass";
import type { Env } from "../env";
import type { MinuteStates } from "./minute-state";

/**
 * Every minute, after the lost-job pass: keeps each shard's keyword posting blocks (src/core/keyword-index/block-pass.ts),
 * deciding from the minute state where given (minute-state.ts). A shard that fails is retried by the next pass; until a
 * word's blocks are built, searches read its postings from the index, so nothing is missed meanwhile.
 */
export async function refreshAllPostingBlocks(env: Env, now = Date.now(), states?: MinuteStates): Promise<number> {
  let built = 0;
  for (const shard of shardNames(env)) {
    try {
      const d1 = shardDatabase(env, shard);
      const marks = states ? (await states.of(d1, shard)).marks : undefined;
      built += await refreshPostingBlocks(d1, now, marks);
    } catch (error) {
      console.error(`posting blocks pass of shard ${shard} failed; the next pass retries`, error);
    }
  }
  return built;
}
