import { app } from "./app";
import type { Env } from "./env";
import { handleJobBatch } from "./jobs/consumer";
import type { JobMessage } from "./ports";
import { sweepLostJobs } from "./jobs/sweep";

export default {
  fetch: app.fetch,
  queue: (batch: MessageBatch<JobMessage>, env: Env, ctx: ExecutionContext) => handleJobBatch(batch, env, ctx),
  scheduled: async (_controller: ScheduledController, env: Env, _ctx: ExecutionContext) => {
    await sweepLostJobs(env);
  },
} satisfies ExportedHandler<Env, JobMessage>;
