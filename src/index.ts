import { app } from "./app";
import { checkedEnv, queriesPerInvocation } from "./checked-env";
import { withQueryBudget } from "./db/invocation-queries";
import type { Env } from "./env";
import { handleJobBatch } from "./jobs/consumer";
import { recordCpuTime } from "./jobs/cpu-time";
import { mergeAllKeywordSegments } from "./jobs/keyword-merge";
import { meteredPasses, type ScheduledPass } from "./jobs/metered-pass";
import { MinuteStates } from "./jobs/minute-state";
import { chargingFirstShard } from "./jobs/pass-bindings";
import { refreshAllPostingBlocks } from "./jobs/posting-blocks";
import { RECENT_JOBS_CRON, recoverRecentJobs } from "./jobs/recent-jobs";
import { sweepLostJobs } from "./jobs/sweep";
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
  // Every minute the jobs of new writes are sent, or lost ones re-sent (recent-jobs.ts), then the keyword posting blocks that are due
  // are built and the keyword index's segments merged when due (keyword-merge.ts); every 15 minutes, the full sweep (sweep.ts).
  // What the passes cost is recorded per shard and hour (metered-pass.ts, pass-usage.ts); what they spend beside the
  // shards (the control database, queue sends) with the first shard's (pass-bindings.ts).
  scheduled: async (controller: ScheduledController, env: Env, _ctx: ExecutionContext) => {
    await withQueryBudget(queriesPerInvocation(env), async () => {
      const checked = checkedEnv(env);
      const at = controller.scheduledTime;
      const run = (passes: ScheduledPass[]) =>
        meteredPasses(
          checked,
          at,
          passes.map(([name, pass]): ScheduledPass => [name, chargingFirstShard(pass)]),
        );
      if (controller.cron !== RECENT_JOBS_CRON) return void (await run([["sweep", (e) => sweepLostJobs(e, at)]]));
      // The three read each shard's state once between them (minute-state.ts).
      const states = new MinuteStates(at);
      await run([
        ["recent_jobs", (e) => recoverRecentJobs(e, at, states)],
        ["posting_blocks", (e) => refreshAllPostingBlocks(e, at, states)],
        ["keyword_merge", (e) => mergeAllKeywordSegments(e, states)],
      ]);
    });
  },
  // Each invocation's CPU time, which only its trace knows (cpu-time.ts): the Worker is its own tail consumer.
  tail: (traces: TraceItem[], env: Env, ctx: ExecutionContext) =>
    withQueryBudget(queriesPerInvocation(env), async () => {
      const write = recordCpuTime(traces, checkedEnv(env));
      if (write) ctx.waitUntil(write.catch((error) => console.error("recording CPU time failed", error)));
    }),
} satisfies ExportedHandler<Env, JobMessage | UsageMessage>;
