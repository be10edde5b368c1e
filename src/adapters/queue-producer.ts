import type { UnitMeter } from "../billable-units";
import type { JobMessage } from "../messages";
import { PLATFORM_LIMITS } from "../platform-limits";
import type { JobQueue } from "../ports";
import { messageBytes } from "./checked-queue";
import { meteredQueue } from "./metered-bindings";
import { queuesOfKind, sendToOne } from "./queue-spread";

/** Queues' sendBatch limits: 100 messages and 256 KB in all; the bytes (UTF-8 JSON, as Queues counts) kept well under. */
const SEND_BATCH = PLATFORM_LIMITS.queues.batchMessages;
const SEND_BATCH_BYTES = 200_000;

/**
 * Job queues: JOBS and JOBS_<name> (queue-spread.ts). A write queues two jobs (embed, then link), so one queue's
 * 5,000 messages a second caps writes near 2,500 a second however many shards there are.
 */
export const JOBS_KIND = "JOBS";

export const jobQueues = (env: object) => queuesOfKind<JobMessage>(env, JOBS_KIND);

/**
 * A producer over the env's job queues: charging `meter` when one is given (a scheduled pass's shard), else whatever
 * meters the env's queues (metered-env.ts).
 */
export function jobProducer(env: object, meter?: UnitMeter | null): QueueProducer {
  const queues = jobQueues(env);
  return new QueueProducer(meter ? queues.map((queue) => meteredQueue(queue, meter)) : queues);
}

/** Sends jobs in batches under Queues' limits, each batch (one sendBatch) to one job queue (queue-spread.ts). */
export class QueueProducer implements JobQueue {
  constructor(
    private readonly queues: Queue<JobMessage>[],
    private readonly random: () => number = Math.random,
  ) {}

  /** `delaySeconds`: when the jobs are delivered (a move waiting out the routing caches). */
  async send(messages: JobMessage[], options: { delaySeconds?: number } = {}): Promise<void> {
    const delay = options.delaySeconds === undefined ? {} : { delaySeconds: options.delaySeconds };
    for (const batch of batches(messages)) {
      await sendToOne(this.queues, JOBS_KIND, this.random, (queue) =>
        queue.sendBatch(batch.map((body) => ({ body, ...delay }))),
      );
    }
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
