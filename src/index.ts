import { app } from "./app";
import { checkedEnv, queriesPerInvocation } from "./checked-env";
import { withQueryBudget } from "./db/invocation-queries";
import type { Env } from "./env";
import { handleJobBatch } from "./jobs/consumer";
import { mergeAllKeywordSegments } from "./jobs/keyword-merge";
import { meteredPass } from "./jobs/metered-pass";
import { MinuteStates } from "./jobs/minute-state";
import { RECENT_JOBS_CRON, recoverRecentJobs } from "./jobs/recent-jobs";
import { sweepLostJobs } from "./jobs/sweep";
import { refreshAllTopPostings } from "./jobs/top-postings";
import { handleUsageBatch, isUsageQueue } from "./jobs/usage-consumer";
import type { JobMessage, UsageMessage } from "./messages";

// Every handler sees the bindings through checkedEnv and runs within D1's queries-per-invocation budget:
// what the platform refuses is refused locally too (docs/limits.md).
export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) =>
    withQueryBudget(queriesPerInvocation(env), () => app.fetch(request, checkedEnv(env), ctx)),
  queue: (batch: MessageBatch<JobMessage | UsageMessage>, env: Env, ctx: ExecutionContext) =>
    withQueryBudget(queriesPerInvocation(env), () =>
      isUsageQueue(batch.queue)
        ? handleUsageBatch(batch as MessageBatch<UsageMessage>, checkedEnv(env))
        : handleJobBatch(batch as MessageBatch<JobMessage>, checkedEnv(env), ctx),
    ),
  // Every minute the recent writes' lost jobs are re-sent (recent-jobs.ts), then the keyword top postings that are due
  // are built and the keyword index's segments merged when due (keyword-merge.ts); every 15 minutes, the full sweep (sweep.ts).
  // What each pass writes is recorded per shard (metered-pass.ts).
  scheduled: async (controller: ScheduledController, env: Env, _ctx: ExecutionContext) => {
    await withQueryBudget(queriesPerInvocation(env), async () => {
      const checked = checkedEnv(env);
      if (controller.cron !== RECENT_JOBS_CRON) return void (await meteredPass(checked, "sweep", sweepLostJobs));
      // The minute passes read each shard's state once between them (minute-state.ts).
      const states = new MinuteStates(controller.scheduledTime);
      await meteredPass(checked, "recent_jobs", (e) => recoverRecentJobs(e, controller.scheduledTime, states));
      await meteredPass(checked, "top_postings", (e) => refreshAllTopPostings(e, controller.scheduledTime, states));
      await meteredPass(checked, "keyword_merge", (e) => mergeAllKeywordSegments(e, states));
    });
  },
} satisfies ExportedHandler<Env, JobMessage | UsageMessage>;
