import { queueUnitsOf } from "../adapters/metered-bindings";
import { UnitMeter } from "../billable-units";
import { recordFailure } from "../control/job-failures";
import type { Env } from "../env";
import type { JobMessage, UsageMessage } from "../messages";
import { meteredEnv } from "../metered-env";
import { QUEUE_OPERATIONS_PER_MESSAGE } from "../price-list";
import { tenantsOfBatch } from "./batch-tenants";
import { JobUsage } from "./job-usage";

/** The job a dead letter is logged as, for its tenant. */
export const DEAD_LETTER_JOB = "dead_letter";

/**
 * The dead-letter queue's consumer: each message (a job's or a usage log's that failed every delivery) is recorded in
 * job_failures (GET /admin/job-failures). Its tenant is charged what the dead letter cost: the message's write to the
 * dead-letter queue, its read and its delete there (each per 64 KB), and the control write.
 */
export async function recordDeadLetters(
  batch: MessageBatch<JobMessage | UsageMessage>,
  env: Env,
  ctx: ExecutionContext,
): Promise<void> {
  const meter = new UnitMeter();
  const metered = meteredEnv(env, meter);
  const tenants = await tenantsOfBatch(batch.messages, metered, ctx);
  const usage = new JobUsage(meter);
  try {
    for (const message of batch.messages) {
      const record = async () => {
        meter.current.queueOperations += deadLetterOperations(message);
        await recordFailure(metered, message, null);
      };
      const tenant = message.body.tenantId === null ? null : tenants.of(message.body.tenantId);
      await (tenant ? usage.extra(tenant, DEAD_LETTER_JOB, record) : record());
      message.ack();
    }
  } finally {
    ctx.waitUntil(usage.send(metered));
  }
}

/** On the dead-letter queue: written, read and deleted, each per 64 KB (its retries before were charged as they came). */
function deadLetterOperations(message: Message<unknown>): number {
  return QUEUE_OPERATIONS_PER_MESSAGE * queueUnitsOf(message.body);
}
