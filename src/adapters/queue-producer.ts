import type { JobMessage } from "../ports";
import type { JobQueue } from "../ports";

const SEND_BATCH = 100; // Queues: at most 100 messages per sendBatch

export class QueueProducer implements JobQueue {
  constructor(private readonly queue: Queue<JobMessage>) {}

  async send(messages: JobMessage[]): Promise<void> {
    for (let i = 0; i < messages.length; i += SEND_BATCH) {
      await this.queue.sendBatch(messages.slice(i, i + SEND_BATCH).map((body) => ({ body })));
    }
  }
}
