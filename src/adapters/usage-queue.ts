import type { ToolCallRecord, UsageLog, UsageMessage } from "../ports";

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
    const messages: UsageMessage[] = [{ tenantId, calls: [] }];
    let chars = 0;
    for (const call of calls) {
      const size = JSON.stringify(call).length + 1;
      if (chars + size > MAX_MESSAGE_CHARS && messages.at(-1)!.calls.length > 0) {
        messages.push({ tenantId, calls: [] });
        chars = 0;
      }
      messages.at(-1)!.calls.push(call);
      chars += size;
    }
    if (messages.length === 1) await this.queue.send(messages[0]!);
    else await this.queue.sendBatch(messages.map((body) => ({ body })));
  }
}
