import { tenantScope } from "../db/scope";
import type { Env } from "../env";
import { buildServices } from "../services";
import { autoLinkItems } from "../core/graph/auto-link";
import { autoSummarize } from "../core/conversations/auto-summarize";
import { embedItems } from "../core/memory/embedding";
import { reindexHeartbeat, reindexLegacyBatches } from "../core/memory/keyword-index";
import { QueueProducer } from "../adapters/queue-producer";
import { recordFailure } from "../db/job-failures";
import { runDeletionSteps } from "../core/ownership/run-deletion";
import { deleteGrantsOfKeys } from "../oauth/key-grants";
import type { JobMessage } from "../ports";

/** Deliveries before a message is dead-lettered: wrangler.toml `max_retries` (5) + the first try. */
export const MAX_ATTEMPTS = 6;
export const DEAD_LETTER_QUEUE = "context-edge-jobs-dlq";

/** Re-index batches one "reindex" job runs before it queues the next (bounded work per invocation). */
export const REINDEX_BATCHES_PER_JOB = 10;
/** Bounded deletion steps one "delete" job runs before it queues the next (src/core/ownership/). */
export const DELETION_STEPS_PER_JOB = 20;

/**
 * Queue consumer: runs each job; a failure is retried with exponential backoff, then dead-lettered.
 * Embed, link and summarize jobs of one tenant in a batch run as one job over all their items (or
 * conversations): its D1 round trips are a handful whatever the number of messages, where one message
 * at a time paid them for every 100 items (an import of 5,000 items: ~400 trips per batch of link
 * jobs) or four for every conversation. If the merged job fails, its messages run one by one (the jobs
 * are idempotent), so only the failing one is retried.
 */
export async function handleJobBatch(batch: MessageBatch<JobMessage>, env: Env, ctx: ExecutionContext): Promise<void> {
  if (batch.queue === DEAD_LETTER_QUEUE) return recordDeadLetters(batch, env);
  const services = buildServices(env, (p) => ctx.waitUntil(p));
  for (const group of mergeableGroups(batch.messages)) {
    if (group.length > 1) {
      try {
        await runMerged(group.map((message) => message.body as MergeableJob), env, services);
        for (const message of group) message.ack();
        continue;
      } catch (error) {
        console.error(`merged ${group[0]!.body.type} job of ${group.length} messages failed; running them one by one`, error);
      }
    }
    for (const message of group) {
      try {
        await runJob(message.body, env, services);
        message.ack();
      } catch (error) {
        console.error(`job ${message.body.type} failed (attempt ${message.attempts})`, error);
        if (message.attempts >= MAX_ATTEMPTS) await recordFailure(env, message, String(error));
        message.retry({ delaySeconds: backoffSeconds(message.attempts) });
      }
    }
  }
}

type MergeableJob = Extract<JobMessage, { type: "embed" | "link" | "summarize" }>;

const isMergeable = (job: JobMessage): job is MergeableJob => job.type === "embed" || job.type === "link" || job.type === "summarize";

/**
 * The batch's messages in groups, in order of each group's first message: embed (or link, or
 * summarize) jobs of one tenant together, every other message alone. An embed always runs before the
 * link it queues (the link is sent when the embed is done), so reordering within a batch never links
 * before embedding.
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

/** A group's jobs (one type, one tenant) as one: every item once, or every conversation's summary at once. */
async function runMerged(jobs: MergeableJob[], env: Env, services: ReturnType<typeof buildServices>): Promise<void> {
  const first = jobs[0]!;
  if (first.type === "summarize") {
    await autoSummarize(tenantScope(env.DB, first.tenantId), services, jobs as Extract<MergeableJob, { type: "summarize" }>[]);
    return;
  }
  const itemIds = [...new Set(jobs.flatMap((job) => (job.type === "summarize" ? [] : job.itemIds)))];
  await runJob({ ...first, itemIds }, env, services);
}

async function runJob(job: JobMessage, env: Env, services: ReturnType<typeof buildServices>): Promise<void> {
  switch (job.type) {
    case "embed":
      await embedItems(tenantScope(env.DB, job.tenantId), services, job.itemIds);
      return;
    case "summarize":
      await autoSummarize(tenantScope(env.DB, job.tenantId), services, [job]);
      return;
    case "link":
      await autoLinkItems(tenantScope(env.DB, job.tenantId), services, job.itemIds);
      return;
    case "reindex":
      await reindexHeartbeat(env.DB, Date.now());
      if (await reindexLegacyBatches(env.DB, REINDEX_BATCHES_PER_JOB)) await new QueueProducer(env.JOBS).send([job]);
      return;
    case "delete": {
      const run = await runDeletionSteps(env.DB, services, job, (keyIds) => deleteGrantsOfKeys(env, keyIds), DELETION_STEPS_PER_JOB);
      if (!run.done) await new QueueProducer(env.JOBS).send([job]);
      return;
    }
  }
}

/** 2, 4, 8, ... seconds, capped at 5 minutes. */
export function backoffSeconds(attempts: number): number {
  return Math.min(300, 2 ** Math.max(1, attempts));
}

async function recordDeadLetters(batch: MessageBatch<JobMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    await recordFailure(env, message, null);
    message.ack();
  }
}
