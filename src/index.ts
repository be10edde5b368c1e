import { app } from "./app";
import { checkedEnv } from "./checked-env";
import type { Env } from "./env";
import { handleJobBatch } from "./jobs/consumer";
import type { JobMessage, UsageMessage } from "./ports";
import { handleUsageBatch, USAGE_QUEUE } from "./jobs/usage-consumer";
import { sweepLostJobs } from "./jobs/sweep";

// Every handler sees the bindings through checkedEnv: what the platform refuses is refused locally too.
export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => app.fetch(request, checkedEnv(env), ctx),
  queue: (batch: MessageBatch<JobMessage | UsageMessage>, env: Env, ctx: ExecutionContext) =>
    batch.queue === USAGE_QUEUE ? handleUsageBatch(batch as MessageBatch<UsageMessage>, checkedEnv(env)) : handleJobBatch(batch as MessageBatch<JobMessage>, checkedEnv(env), ctx),
  scheduled: async (_controller: ScheduledController, env: Env, _ctx: ExecutionContext) => {
    await sweepLostJobs(checkedEnv(env));
  },
} satisfies ExportedHandler<Env, JobMessage | UsageMessage>;
