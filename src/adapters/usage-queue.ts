import type { ToolCallRecord, UsageLog, UsageMessage } from "../ports";
import { boundedGroups } from "../core/shared/bounded-groups";

/** Queues' message limit is 128 KB; a message is kept under this many characters of JSON. */
const MAX_MESSAGE_CHARS = 100_000;

/**
 * The usage log through the USAGE queue: one message per request (a JSON-RPC batch of 50 calls is ~10 KB),
 * split only past the message limit. Nothing is written to D1 on the request's behalf.
 */
export class QueueUsageLog implements UsageLog {
  constructor(private readonly queue: Queue<UsageMessage>) {}

  async record(tenantId: string, calls: ToolCallRecord[]): Promise<void> {
    if (calls.length === 0) return;
    const messages = boundedGroups(calls, { count: Infinity, size: MAX_MESSAGE_CHARS }, (call) => JSON.stringify(call).length + 1).map((group) => ({ tenantId, calls: group }));
    if (messages.length === 1) await this.queue.send(messages[0]!);
    else await this.queue.sendBatch(messages.map((body) => ({ body })));
  }
}
