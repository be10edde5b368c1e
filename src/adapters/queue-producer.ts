import type { JobMessage } from "../ports";
import type { JobQueue } from "../ports";
import { messageBytes } from "./checked-queue";
import { PLATFORM_LIMITS } from "./platform-limits";

/** Queues' sendBatch limits: 100 messages and 256 KB in all; the bytes (UTF-8 JSON, as Queues counts) kept well under. */
const SEND_BATCH = PLATFORM_LIMITS.queues.batchMessages;
const SEND_BATCH_BYTES = 200_000;

export class QueueProducer implements JobQueue {
  constructor(private readonly queue: Queue<JobMessage>) {}

  async send(messages: JobMessage[]): Promise<void> {
    for (const batch of batches(messages)) await this.queue.sendBatch(batch.map((body) => ({ body })));
  }
}

/** Consecutive messages grouped under both limits (an import of 10,000 items queues 100 embed jobs of ~5 KB). */
export function* batches(messages: JobMessage[]): Generator<JobMessage[]> {
  let batch: JobMessage[] = [];
  let bytes = 0;
  for (const message of messages) {
    const size = messageBytes(message);
    if (batch.length > 0 && (batch.length === SEND_BATCH || bytes + size > SEND_BATCH_BYTES)) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(message);
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}
