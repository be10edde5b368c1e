import { app } from "./app";
import type { Env } from "./env";
import { handleJobBatch } from "./jobs/consumer";
import type { JobMessage, UsageMessage } from "./ports";
import { handleUsageBatch, USAGE_QUEUE } from "./jobs/usage-consumer";
import { sweepLostJobs } from "./jobs/sweep";

export default {
  fetch: app.fetch,
  queue: (batch: MessageBatch<JobMessage | UsageMessage>, env: Env, ctx: ExecutionContext) =>
    batch.queue === USAGE_QUEUE ? handleUsageBatch(batch as MessageBatch<UsageMessage>, env) : handleJobBatch(batch as MessageBatch<JobMessage>, env, ctx),
  scheduled: async (_controller: ScheduledController, env: Env, _ctx: ExecutionContext) => {
    await sweepLostJobs(env);
  },
} satisfies ExportedHandler<Env, JobMessage | UsageMessage>;
