import type { JobRunRecord, ToolCallRecord, UsageMessage } from "../messages";
import { PLATFORM_LIMITS } from "../platform-limits";
import type { UsageLog } from "../ports";
import { boundedGroups } from "../shared/bounded-groups";
import { messageBytes } from "./checked-queue";
import { sentMessageOperations } from "./metered-bindings";
import { queuesOfKind, sendToOne } from "./queue-spread";

/** Queues' message limit is 128 KB (UTF-8 JSON); a message's calls are kept under this many bytes. */
const MAX_MESSAGE_BYTES = 100_000;
/** sendBatch's limits: 100 messages, 256 KB in all; two messages of up to 100 KB fit, so batches hold two. */
const MESSAGES_PER_BATCH = Math.min(
  PLATFORM_LIMITS.queues.batchMessages,
  Math.floor(PLATFORM_LIMITS.queues.batchBytes / (MAX_MESSAGE_BYTES + 1_000)),
);

/**
 * Usage queues: USAGE and USAGE_<name> (queue-spread.ts). The log sends a message a request, so one queue's 5,000
 * messages a second would cap the whole service at 5,000 requests a second however many shards there are.
 */
export const USAGE_KIND = "USAGE";

export const usageQueues = (env: object) => queuesOfKind<UsageMessage>(env, USAGE_KIND);

/**
 * The usage log through the usage queues: one message per request (a JSON-RPC batch of 50 calls is ~10 KB), split
 * only past the message limit, to one queue (queue-spread.ts; the consumer does not care in what order calls
 * arrive). Nothing is written to D1 on the request's behalf.
 */
export class QueueUsageLog implements UsageLog {
  constructor(
    private readonly queues: Queue<UsageMessage>[],
    private readonly random: () => number = Math.random,
  ) {}

  async record(tenantId: string, calls: ToolCallRecord[], jobs: JobRunRecord[] = []): Promise<void> {
    const messages = usageMessages(tenantId, calls, jobs);
    // Each send whole to one queue (a large request's batches may go to different ones).
    for (let i = 0; i < messages.length; i += MESSAGES_PER_BATCH) {
      const batch = messages.slice(i, i + MESSAGES_PER_BATCH);
      await sendToOne(this.queues, USAGE_KIND, this.random, (queue) =>
        batch.length === 1 ? queue.send(batch[0]!) : queue.sendBatch(batch.map((body) => ({ body }))),
      );
    }
  }
}

/** The messages a log of calls and jobs travels as: split only past the message limit. */
function usageMessages(tenantId: string, calls: ToolCallRecord[], jobs: JobRunRecord[]): UsageMessage[] {
  const callMessages = boundedGroups(
    calls,
    { count: Infinity, size: MAX_MESSAGE_BYTES },
    (call) => messageBytes(call) + 1,
  ).map((group): UsageMessage => ({ tenantId, calls: group }));
  const jobMessages = boundedGroups(
    jobs,
    { count: Infinity, size: MAX_MESSAGE_BYTES },
    (job) => messageBytes(job) + 1,
  ).map((group): UsageMessage => ({ tenantId, calls: [], jobs: group }));
  return [...callMessages, ...jobMessages];
}

/**
 * Charges each record its share of the messages that carry it (their sends and billed operations: a usage message of
 * up to 100 KB is two 64 KB units an operation), before they are sent: a message carries its own cost. The cost is
 * read from the messages without it, a few bytes shorter than what is sent.
 */
export function chargeUsageMessages(tenantId: string, calls: ToolCallRecord[], jobs: JobRunRecord[] = []): void {
  const records = [...calls, ...jobs];
  if (records.length === 0) return;
  const messages = usageMessages(tenantId, calls, jobs);
  const operations = messages.reduce((sum, message) => sum + sentMessageOperations(message), 0);
  for (const record of records) {
    record.units.queueSends += messages.length / records.length;
    record.units.queueOperations += operations / records.length;
  }
}
