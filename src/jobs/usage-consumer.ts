import { redeliveryOperations } from "../adapters/metered-bindings";
import { addUnits, type BillableUnits, noUnits, shareOf, UnitMeter } from "../billable-units";
import { liveTenantShards } from "../control/routing";
import { shardDatabase } from "../control/shards";
import { recordUsage } from "../core/tenants/usage-log";
import { meteredD1 } from "../db/metered-d1";
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
 * The control read is charged to the tenants written, by their messages, and a redelivered message's read to its
 * tenant, as part of their usage log's cost.
 */
export async function handleUsageBatch(batch: MessageBatch<UsageMessage>, env: Env): Promise<void> {
  const meter = new UnitMeter();
  const read = noUnits();
  const shards = await meter.charging(read, () =>
    liveTenantShards(
      meteredD1(env.CONTROL, meter),
      batch.messages.map((m) => m.body.tenantId),
    ),
  );
  const byShard = new Map<string, Message<UsageMessage>[]>();
  for (const message of batch.messages) {
    const place = shards.get(message.body.tenantId);
    if (place === undefined) message.ack();
    else if (place.frozen)
      message.retry({ delaySeconds: backoffSeconds(message.attempts) }); // its shard refuses its writes while it moves
    else byShard.set(place.shard, [...(byShard.get(place.shard) ?? []), message]);
  }
  const written = [...byShard.values()].flat();
  for (const [shard, messages] of byShard) {
    try {
      await recordUsage(
        shardDatabase(env, shard),
        messages.map((m) => m.body),
        spentOn(messages, shareOf(read, written.length)),
      );
      for (const message of messages) message.ack();
    } catch (error) {
      console.error(`usage log write to ${shard} failed; retrying ${messages.length} messages`, error);
      for (const message of messages) message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    }
  }
}

/** Each tenant's share of the batch's control read, a share a message, and its messages' redeliveries. */
function spentOn(messages: readonly Message<UsageMessage>[], readShare: BillableUnits): Map<string, BillableUnits> {
  const spent = new Map<string, BillableUnits>();
  for (const message of messages) {
    const units = spent.get(message.body.tenantId) ?? noUnits();
    addUnits(units, readShare);
    units.queueOperations += redeliveryOperations(message);
    spent.set(message.body.tenantId, units);
  }
  return spent;
}
