import { liveTenantShards } from "../control/routing";
import { shardDatabase } from "../control/shards";
import { recordUsage } from "../core/tenants/usage-log";
import type { Env } from "../env";
import type { UsageMessage } from "../messages";
import { backoffSeconds } from "./consumer";

export const USAGE_QUEUE = "context-edge-usage";

/** Whether a batch comes from a usage queue: context-edge-usage, or another named context-edge-usage-<name> (wrangler.toml). */
export function isUsageQueue(queue: string): boolean {
  return queue === USAGE_QUEUE || queue.startsWith(`${USAGE_QUEUE}-`);
}

/**
 * The USAGE queue's consumer: a batch of requests' tool calls and jobs' units becomes one write per shard it touches, after
 * one control query for the batch's tenants (uncached: calls of a tenant whose deletion has begun are dropped,
 * so none outlives it). If a shard's write fails, its messages are retried whole; the write is one
 * batch (a transaction), so a retry never counts a call twice unless the worker dies between the commit and the ack.
 */
export async function handleUsageBatch(batch: MessageBatch<UsageMessage>, env: Env): Promise<void> {
  const shards = await liveTenantShards(
    env.CONTROL,
    batch.messages.map((m) => m.body.tenantId),
  );
  const byShard = new Map<string, Message<UsageMessage>[]>();
  for (const message of batch.messages) {
    const place = shards.get(message.body.tenantId);
    if (place === undefined) message.ack();
    else if (place.frozen)
      message.retry({ delaySeconds: backoffSeconds(message.attempts) }); // its shard refuses its writes while it moves
    else byShard.set(place.shard, [...(byShard.get(place.shard) ?? []), message]);
  }
  for (const [shard, messages] of byShard) {
    try {
      await recordUsage(
        shardDatabase(env, shard),
        messages.map((m) => m.body),
      );
      for (const message of messages) message.ack();
    } catch (error) {
      console.error(`usage log write to ${shard} failed; retrying ${messages.length} messages`, error);
      for (const message of messages) message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    }
  }
}
