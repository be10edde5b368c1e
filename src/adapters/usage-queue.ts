import type { ToolCallRecord, UsageLog, UsageMessage } from "../ports";
import { boundedGroups } from "../core/shared/bounded-groups";
import { messageBytes } from "./checked-queue";
import { PLATFORM_LIMITS } from "./platform-limits";

/** Queues' message limit is 128 KB (UTF-8 JSON); a message's calls are kept under this many bytes. */
const MAX_MESSAGE_BYTES = 100_000;
/** sendBatch's limits: 100 messages, 256 KB in all; two messages of up to 100 KB fit, so batches hold two. */
const MESSAGES_PER_BATCH = Math.min(PLATFORM_LIMITS.queues.batchMessages, Math.floor(PLATFORM_LIMITS.queues.batchBytes / (MAX_MESSAGE_BYTES + 1_000)));

/**
 * The usage log through the USAGE queue: one message per request (a JSON-RPC batch of 50 calls is ~10 KB),
 * split only past the message limit. Nothing is written to D1 on the request's behalf.
 */
export class QueueUsageLog implements UsageLog {
  constructor(private readonly queue: Queue<UsageMessage>) {}

  async record(tenantId: string, calls: ToolCallRecord[]): Promise<void> {
    if (calls.length === 0) return;
    const messages = boundedGroups(calls, { count: Infinity, size: MAX_MESSAGE_BYTES }, (call) => messageBytes(call) + 1).map((group) => ({ tenantId, calls: group }));
    if (messages.length === 1) {
      await this.queue.send(messages[0]!);
      return;
    }
    for (let i = 0; i < messages.length; i += MESSAGES_PER_BATCH) {
      await this.queue.sendBatch(messages.slice(i, i + MESSAGES_PER_BATCH).map((body) => ({ body })));
    }
  }
}
