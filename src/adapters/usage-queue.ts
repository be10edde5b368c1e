import type { ToolCallRecord, UsageLog, UsageMessage } from "../ports";
import { boundedGroups } from "../core/shared/bounded-groups";
import { messageBytes } from "./checked-queue";
import { PLATFORM_LIMITS } from "./platform-limits";

/** Queues' message limit is 128 KB (UTF-8 JSON); a message's calls are kept under this many bytes. */
const MAX_MESSAGE_BYTES = 100_000;
/** sendBatch's limits: 100 messages, 256 KB in all; two messages of up to 100 KB fit, so batches hold two. */
const MESSAGES_PER_BATCH = Math.min(PLATFORM_LIMITS.queues.batchMessages, Math.floor(PLATFORM_LIMITS.queues.batchBytes / (MAX_MESSAGE_BYTES + 1_000)));

/**
 * Usage queues are the producer bindings named USAGE and USAGE_<name> (wrangler.toml), each with a consumer: a queue
 * takes 5,000 messages a second and the log sends one a request, so one queue would cap the whole service at 5,000
 * requests a second however many shards there are. Adding a queue is a producer and a consumer block, no code change.
 */
export const USAGE_BINDING = "USAGE";

export function isUsageBinding(name: string): boolean {
  return name === USAGE_BINDING || name.startsWith(`${USAGE_BINDING}_`);
}

/** The deployment's usage queues, by binding name order. */
export function usageQueues(env: object): Queue<UsageMessage>[] {
  return Object.entries(env)
    .filter(([name, value]) => isUsageBinding(name) && typeof (value as Queue<UsageMessage> | null)?.send === "function")
    .sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))
    .map(([, queue]) => queue as Queue<UsageMessage>);
}

/**
 * The usage log through the usage queues: one message per request (a JSON-RPC batch of 50 calls is ~10 KB), split
 * only past the message limit, to a queue drawn at random (the load spreads evenly; the consumer does not care in
 * what order calls arrive). A queue that refuses (over its throughput, or down) passes the request's calls to the
 * next. Nothing is written to D1 on the request's behalf.
 */
export class QueueUsageLog implements UsageLog {
  constructor(
    private readonly queues: Queue<UsageMessage>[],
    private readonly random: () => number = Math.random,
  ) {}

  async record(tenantId: string, calls: ToolCallRecord[]): Promise<void> {
    if (calls.length === 0) return;
    if (this.queues.length === 0) throw new Error(`No usage queue: bind a queue producer named ${USAGE_BINDING} (wrangler.toml)`);
    const messages = boundedGroups(calls, { count: Infinity, size: MAX_MESSAGE_BYTES }, (call) => messageBytes(call) + 1).map((group) => ({ tenantId, calls: group }));
    const first = Math.floor(this.random() * this.queues.length);
    for (let tried = 0; ; tried++) {
      const queue = this.queues[(first + tried) % this.queues.length]!;
      try {
        return await send(queue, messages);
      } catch (error) {
        // A queue that took part of a split request before failing would count those calls twice if retried elsewhere.
        if (tried + 1 >= this.queues.length || messages.length > MESSAGES_PER_BATCH) throw error;
        console.error("usage queue refused a message; sending it to the next", error);
      }
    }
  }
}

async function send(queue: Queue<UsageMessage>, messages: UsageMessage[]): Promise<void> {
  if (messages.length === 1) return void (await queue.send(messages[0]!));
  for (let i = 0; i < messages.length; i += MESSAGES_PER_BATCH) {
    await queue.sendBatch(messages.slice(i, i + MESSAGES_PER_BATCH).map((body) => ({ body })));
  }
}
