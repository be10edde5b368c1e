import { redeliveryOperations } from "../adapters/metered-bindings";
import { jobProducer } from "../adapters/queue-producer";
import { noUnits, shareOf, UnitMeter } from "../billable-units";
import { recordFailure } from "../control/job-failures";
import { isActive } from "../control/move-records";
import { runMove } from "../control/moves";
import { forgetRoutes } from "../control/routing";
import { autoSummarize } from "../core/conversations/auto-summarize";
import { runConversion } from "../core/documents/queued-conversion";
import { EXTRACT_JOB_QUERIES, runExtraction } from "../core/extraction/run-extraction";
import { autoLinkItems } from "../core/graph/auto-link";
import { reindexHeartbeat, reindexLegacyBatches } from "../core/keyword-index/indexing";
import { embedItemsInBudget } from "../core/memory/embedding";
import { runNewItems } from "../core/memory/new-items";
import { runDeletionSteps } from "../core/ownership/run-deletion";
import { queryBudget, remainingQueries } from "../db/invocation-queries";
import type { Env } from "../env";
import { isQueryBudgetExceeded, isTenantMoving, QueryBudgetExceeded } from "../errors";
import type { JobMessage } from "../messages";
import { meteredEnv } from "../metered-env";
import { deleteGrantsOfKeys } from "../oauth/key-grants";
import type { OpenedTenant } from "../open-tenant";
import type { Services } from "../ports";
import { type ItemJobType, itemJobs } from "../shared/item-jobs";
import { type BatchTenants, tenantsOfBatch } from "./batch-tenants";
import { recordDeadLetters } from "./dead-letters";
import { JobUsage } from "./job-usage";
import { meteredShardWork } from "./metered-pass";
import { shareEmbeddings } from "./shared-embeddings";

/**
 * Deliveries before a message is dead-lettered: wrangler.toml `max_retries` (20) + the first try. With the backoff
 * below that spans ~68 minutes, so an outage of a dependency shorter than that dead-letters nothing; with a few
 * retries the backoff spans about a minute, and a short embedder outage would dead-letter every job in flight.
 */
export const MAX_ATTEMPTS = 21;
export const DEAD_LETTER_QUEUE = "context-edge-jobs-dlq";

/** Re-index batches one "reindex" job runs before it queues the next (bounded work per invocation). */
export const REINDEX_BATCHES_PER_JOB = 10;
/** Bounded deletion steps one "delete" job runs before it queues the next (src/core/ownership/). */
export const DELETION_STEPS_PER_JOB = 20;
/** Pages one "move" job copies, verifies or purges before it queues the next (~4 D1 queries a page). */
export const MOVE_PAGES_PER_JOB = 100;
/**
 * D1 queries a group of a batch is not started with fewer of: a job reads and writes in a few batches. Jobs
 * that loop (moves, deletions, merged summaries) also size their pages, steps and groups by what is left.
 */
export const JOB_QUERIES = 10;

/**
 * Queue consumer: runs each job; a failure is retried with exponential backoff, then dead-lettered.
 * Embed, link and summarize jobs of one tenant in a batch run as one job over all their items (or
 * conversations): its D1 round trips are a handful whatever the number of messages, where one message
 * at a time would pay them for every 100 items or four for every conversation. If the merged job fails,
 * its messages run one by one (the jobs are idempotent), so only the failing one is retried.
 */
export async function handleJobBatch(
  batch: MessageBatch<JobMessage>,
  checked: Env,
  ctx: ExecutionContext,
): Promise<void> {
  if (batch.queue === DEAD_LETTER_QUEUE) return recordDeadLetters(batch, checked, ctx);
  // Every binding the batch reaches charges it: its runs their own units, the rest is shared (job-usage.ts).
  const meter = new UnitMeter();
  const env = meteredEnv(checked, meter);
  const tenants = await tenantsOfBatch(batch.messages, env, ctx);
  const groups = mergeableGroups(batch.messages);
  const usage = new JobUsage(meter);
  try {
    await shareBatchEmbeddings(groups, tenants, usage);
    await runGroups(groups, env, tenants, usage);
  } finally {
    ctx.waitUntil(usage.send(env));
  }
}

async function runGroups(
  groups: Message<JobMessage>[][],
  env: Env,
  tenants: BatchTenants,
  usage: JobUsage,
): Promise<void> {
  for (const [index, group] of groups.entries()) {
    // D1's queries per invocation: a group is not started with fewer than JOB_QUERIES left (the first always
    // runs); the rest of the batch goes back to the queue as new messages, for an invocation of its own.
    const job = group[0]!.body;
    if (index > 0 && remainingQueries() < queriesToStart(job)) return deferMessages(groups.slice(index).flat(), env);
    const tenant = job.type === "reindex" ? null : tenants.of(job.tenantId);
    if (job.type !== "reindex" && tenant === null) {
      // The tenant is gone (its deletion finished): nothing is left to embed, link, summarize or delete.
      for (const message of group) message.ack();
      continue;
    }
    // A redelivery reads its message again: charged to the run that takes it.
    if (tenant)
      usage.carry(tenant.scope.tenantId, { queueOperations: group.reduce((n, m) => n + redeliveryOperations(m), 0) });
    if (group.length > 1) {
      try {
        const jobs = group.map((message) => message.body as MergeableJob);
        await usage.run(tenant!, jobs, () => runMerged(jobs, env, tenant!));
        for (const message of group) message.ack();
        continue;
      } catch (error) {
        if (isQueryBudgetExceeded(error)) {
          // The invocation's D1 queries are spent: nothing more runs here; the messages are retried.
          console.error(
            `merged ${group[0]!.body.type} job of ${group.length} messages ran out of D1 queries; retrying them`,
            error,
          );
          for (const message of group) message.retry({ delaySeconds: backoffSeconds(message.attempts) });
          continue;
        }
        console.error(
          `merged ${group[0]!.body.type} job of ${group.length} messages failed; running them one by one`,
          error,
        );
      }
    }
    for (const message of group) {
      try {
        await (tenant
          ? usage.run(tenant, [message.body], () => runJob(message.body, env, tenant))
          : runShardJob(message, env));
        message.ack();
      } catch (error) {
        console.error(`job ${message.body.type} failed (attempt ${message.attempts})`, error);
        // The tenant's shard froze it for a move: the retry finds where it lives then.
        if (isTenantMoving(error) && message.body.tenantId !== null) forgetRoutes({ tenantId: message.body.tenantId });
        if (message.attempts >= MAX_ATTEMPTS) {
          const record = () => recordFailure(env, message, String(error));
          await (tenant ? usage.chargeLastRun(tenant, record) : record());
        }
        message.retry({ delaySeconds: backoffSeconds(message.attempts) });
      }
    }
  }
}

/** The D1 queries a job is not started with fewer of: an extract job's first window always runs. */
const queriesToStart = (job: JobMessage) => (job.type === "extract" ? EXTRACT_JOB_QUERIES : JOB_QUERIES);

type MergeableJob = Extract<JobMessage, { type: "embed" | "link" | "summarize" }>;

const isMergeable = (job: JobMessage): job is MergeableJob =>
  job.type === "embed" || job.type === "link" || job.type === "summarize";

/**
 * The batch's messages in groups, in order of each group's first message: embed (or link, or
 * summarize) jobs of one tenant together, every other message alone. An embed always runs before the
 * link it queues (the link is sent when the embed is done), so reordering within a batch never links
 * before embedding. A new-items message runs alone: it holds a minute's items already (up to 500), and
 * fifty of them merged made a job whose linking ran past the invocation's D1 queries, retried whole.
 */
function mergeableGroups(messages: readonly Message<JobMessage>[]): Message<JobMessage>[][] {
  const groups: Message<JobMessage>[][] = [];
  const byKey = new Map<string, Message<JobMessage>[]>();
  for (const message of messages) {
    const job = message.body;
    if (!isMergeable(job)) {
      groups.push([message]);
      continue;
    }
    const key = `${job.type}\u0000${job.tenantId}`;
    const group = byKey.get(key);
    if (group) group.push(message);
    else {
      const fresh = [message];
      byKey.set(key, fresh);
      groups.push(fresh);
    }
  }
  return groups;
}

/**
 * The batch's embed groups of several tenants embedded in shared calls (shared-embeddings.ts), before any group runs;
 * if that fails, each group embeds its own as before.
 */
async function shareBatchEmbeddings(
  groups: Message<JobMessage>[][],
  tenants: BatchTenants,
  usage: JobUsage,
): Promise<void> {
  const embeds = groups.flatMap((group) => {
    const job = group[0]!.body;
    const embeds = job.type === "embed" || job.type === "new-items";
    const tenant = embeds ? tenants.of(job.tenantId) : null;
    if (!embeds || tenant === null) return [];
    const itemIds = [
      ...new Set(group.flatMap((m) => (m.body.type === "embed" || m.body.type === "new-items" ? m.body.itemIds : []))),
    ];
    return [{ scope: tenant.scope, itemIds, embedder: tenant.services.embedder, meter: tenant.services.meter }];
  });
  if (embeds.length < 2) return;
  // The shared calls are charged to each tenant's embed job by its share of the items.
  const units = noUnits();
  try {
    const shared = await embeds[0]!.meter.charging(units, () => shareEmbeddings(embeds, embeds[0]!.embedder));
    const items = embeds.reduce((sum, e) => sum + e.itemIds.length, 0);
    for (const embed of embeds) usage.carry(embed.scope.tenantId, shareOf(units, items / embed.itemIds.length));
    tenants.useEmbeddings(shared);
  } catch (error) {
    console.error(`shared embedding of ${embeds.length} tenants' embed jobs failed; each embeds its own`, error);
  }
}

/** A group's jobs (one type, one tenant) as one: every item once, or every conversation's summary at once. */
async function runMerged(jobs: MergeableJob[], env: Env, tenant: OpenedTenant): Promise<void> {
  const first = jobs[0]!;
  if (first.type === "summarize") {
    await summarize(first.tenantId, jobs as Extract<MergeableJob, { type: "summarize" }>[], tenant);
    return;
  }
  const itemIds = [...new Set(jobs.flatMap((job) => (job.type === "summarize" ? [] : job.itemIds)))];
  await runJob({ ...first, itemIds }, env, tenant);
}

/**
 * A re-index job: work over one shard's tenants, charged to the shard and recorded there (metered-pass.ts), its
 * redelivery's read and its next job's send included.
 */
async function runShardJob(message: Message<JobMessage>, env: Env): Promise<void> {
  const job = message.body;
  if (job.type !== "reindex") throw new Error(`job ${job.type} has no tenant to run for`);
  await meteredShardWork(env, job.shard, "reindex", async (d1, meter) => {
    meter.current.queueOperations += redeliveryOperations(message);
    await reindexHeartbeat(d1, Date.now());
    if (await reindexLegacyBatches(d1, REINDEX_BATCHES_PER_JOB)) await jobProducer(env, meter).send([job]);
  });
}

/** Runs one of a tenant's jobs, `tenant` opened for it; its units are charged by the env's meter (metered-env.ts). */
async function runJob(job: JobMessage, env: Env, tenant: OpenedTenant): Promise<void> {
  if (job.type === "reindex") throw new Error("a re-index job names a shard, not a tenant");
  if (job.type === "move") {
    const run = await runMove(env, job.tenantId, MOVE_PAGES_PER_JOB);
    if (isActive(run.state)) await jobProducer(env).send([job], { delaySeconds: Math.ceil(run.waitMs / 1000) });
    return;
  }
  const { scope, services } = tenant;
  switch (job.type) {
    case "embed": {
      const run = await embedItemsInBudget(scope, services, job.itemIds);
      await queueRest("embed", job.tenantId, run.left.length < job.itemIds.length, run.left, services);
      return;
    }
    case "summarize":
      await summarize(job.tenantId, [job], tenant);
      return;
    case "link": {
      const run = await autoLinkItems(scope, services, job.itemIds);
      await queueRest("link", job.tenantId, run.left.length < job.itemIds.length, run.left, services);
      return;
    }
    case "new-items": {
      const run = await runNewItems(scope, services, job.itemIds);
      await queueRest("new-items", job.tenantId, run.left.length < job.itemIds.length, run.left, services);
      return;
    }
    case "extract": {
      const run = await runExtraction(scope, services, job);
      const next =
        run.state === "deferred"
          ? { flush: job.flush, delaySeconds: run.delaySeconds }
          : run.state === "done"
            ? run.again
            : null;
      if (next) {
        const delay = next.delaySeconds > 0 ? { delaySeconds: next.delaySeconds } : {};
        await services.jobs.send([{ ...job, flush: next.flush }], delay);
      }
      return;
    }
    case "convert":
      await runConversion(scope, services, job);
      return;
    case "delete": {
      const run = await runDeletionSteps(
        { control: env.CONTROL, data: scope.d1 },
        services,
        job,
        (keyIds) => deleteGrantsOfKeys(env, keyIds),
        DELETION_STEPS_PER_JOB,
      );
      if (!run.done) await jobProducer(env).send([job]);
      return;
    }
  }
}

/**
 * Messages this invocation has no D1 queries left for, sent again and acknowledged: deferred, not failed, so
 * their attempts (and dead-lettering) count only real failures. If the queue refuses, they are retried instead.
 */
async function deferMessages(messages: Message<JobMessage>[], env: Env): Promise<void> {
  try {
    await jobProducer(env).send(messages.map((m) => m.body));
    for (const message of messages) message.ack();
  } catch (error) {
    console.error(`could not defer ${messages.length} jobs to a new invocation; retrying them`, error);
    for (const message of messages) message.retry({ delaySeconds: backoffSeconds(1) });
  }
}

/**
 * Summaries of one tenant's conversations, as many as the invocation's D1 queries allow; the rest are queued
 * again as summarize jobs (one a conversation, as writers send them). One that finds no room at all fails,
 * so a budget too small for any summary ends in retries and the dead-letter queue, not in a loop.
 */
async function summarize(
  tenantId: string,
  jobs: Extract<JobMessage, { type: "summarize" }>[],
  tenant: OpenedTenant,
): Promise<void> {
  const run = await autoSummarize(tenant.scope, tenant.services, jobs);
  if (run.left.length === 0) return;
  if (run.summarized === 0) throw new QueryBudgetExceeded(queryBudget()!.limit);
  await tenant.services.jobs.send(
    run.left.map((r) => ({
      type: "summarize" as const,
      tenantId,
      conversationId: r.conversationId,
      messageCount: r.messageCount,
    })),
  );
}

/**
 * The items an embed, link or new-items job left for lack of D1 queries (D1_QUERIES_PER_INVOCATION), queued again as jobs of
 * their own. A job that did nothing at all fails instead, so a budget too small for any of it ends in retries and
 * the dead-letter queue, not in a loop.
 */
async function queueRest(
  type: ItemJobType,
  tenantId: string,
  progressed: boolean,
  left: string[],
  services: Services,
): Promise<void> {
  if (left.length === 0) return;
  if (!progressed) throw new QueryBudgetExceeded(queryBudget()?.limit ?? 0);
  await services.jobs.send(itemJobs(type, tenantId, left));
}

/** 2, 4, 8, ... seconds, capped at 5 minutes. */
export function backoffSeconds(attempts: number): number {
  return Math.min(300, 2 ** Math.max(1, attempts));
}
