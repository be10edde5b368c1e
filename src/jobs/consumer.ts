import { tenantScope } from "../db/scope";
import { forgetRoutes, tenantShards } from "../control/routing";
import { isActive, runMove } from "../control/moves";
import { isTenantMoving } from "../errors";
import { shardDatabase } from "../control/shards";
import type { Env } from "../env";
import { buildServices } from "../services";
import { autoLinkItems } from "../core/graph/auto-link";
import { autoSummarize } from "../core/conversations/auto-summarize";
import { embedItems } from "../core/memory/embedding";
import { reindexHeartbeat, reindexLegacyBatches } from "../core/memory/keyword-index";
import { QueueProducer } from "../adapters/queue-producer";
import { recordFailure } from "../control/job-failures";
import { runDeletionSteps } from "../core/ownership/run-deletion";
import { deleteGrantsOfKeys } from "../oauth/key-grants";
import type { JobMessage, Services } from "../ports";

/**
 * Deliveries before a message is dead-lettered: wrangler.toml `max_retries` (20) + the first try. With the backoff
 * below that spans ~68 minutes, so an outage of a dependency shorter than that dead-letters nothing; 5 retries
 * spanned 62 seconds, and a short embedder outage dead-lettered every job in flight.
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
 * Queue consumer: runs each job; a failure is retried with exponential backoff, then dead-lettered.
 * Embed, link and summarize jobs of one tenant in a batch run as one job over all their items (or
 * conversations): its D1 round trips are a handful whatever the number of messages, where one message
 * at a time paid them for every 100 items (an import of 5,000 items: ~400 trips per batch of link
 * jobs) or four for every conversation. If the merged job fails, its messages run one by one (the jobs
 * are idempotent), so only the failing one is retried.
 */
export async function handleJobBatch(batch: MessageBatch<JobMessage>, env: Env, ctx: ExecutionContext): Promise<void> {
  if (batch.queue === DEAD_LETTER_QUEUE) return recordDeadLetters(batch, env);
  const shards = await shardsOfBatch(batch.messages, env, ctx);
  for (const group of mergeableGroups(batch.messages)) {
    const shard = shards.of(group[0]!.body);
    if (shard === null) {
      // The tenant is gone (its deletion finished): nothing is left to embed, link, summarize or delete.
      for (const message of group) message.ack();
      continue;
    }
    if (group.length > 1) {
      try {
        await runMerged(group.map((message) => message.body as MergeableJob), env, shard);
        for (const message of group) message.ack();
        continue;
      } catch (error) {
        console.error(`merged ${group[0]!.body.type} job of ${group.length} messages failed; running them one by one`, error);
      }
    }
    for (const message of group) {
      try {
        await runJob(message.body, env, shard);
        message.ack();
      } catch (error) {
        console.error(`job ${message.body.type} failed (attempt ${message.attempts})`, error);
        // The tenant's shard froze it for a move: the retry finds where it lives then.
        if (isTenantMoving(error) && message.body.tenantId !== null) forgetRoutes({ tenantId: message.body.tenantId });
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

/** Where a job's data lives, with the adapters built over it (one set per shard a batch touches). */
interface ShardWork {
  d1: D1Database;
  services: Services;
}

/**
 * The shard of every message of a batch, from one control query at most (routing.ts caches it): a job
 * names its tenant, and the control database says where the tenant lives now; a re-index job names its shard.
 */
async function shardsOfBatch(messages: readonly Message<JobMessage>[], env: Env, ctx: ExecutionContext): Promise<{ of(job: JobMessage): ShardWork | null }> {
  const tenantIds = messages.flatMap((m) => (m.body.tenantId === null ? [] : [m.body.tenantId]));
  const placed = tenantIds.length > 0 ? await tenantShards(env.CONTROL, tenantIds) : new Map<string, string>();
  const work = new Map<string, ShardWork>();
  return {
    of(job) {
      const shard = job.tenantId === null ? job.shard : placed.get(job.tenantId);
      if (shard === undefined) return null;
      let found = work.get(shard);
      if (!found) {
        const d1 = shardDatabase(env, shard);
        work.set(shard, (found = { d1, services: buildServices(env, d1, (p) => ctx.waitUntil(p)) }));
      }
      return found;
    },
  };
}

/** A group's jobs (one type, one tenant) as one: every item once, or every conversation's summary at once. */
async function runMerged(jobs: MergeableJob[], env: Env, shard: ShardWork): Promise<void> {
  const first = jobs[0]!;
  if (first.type === "summarize") {
    await autoSummarize(tenantScope(shard.d1, first.tenantId), shard.services, jobs as Extract<MergeableJob, { type: "summarize" }>[]);
    return;
  }
  const itemIds = [...new Set(jobs.flatMap((job) => (job.type === "summarize" ? [] : job.itemIds)))];
  await runJob({ ...first, itemIds }, env, shard);
}

async function runJob(job: JobMessage, env: Env, shard: ShardWork): Promise<void> {
  const { d1, services } = shard;
  switch (job.type) {
    case "embed":
      await embedItems(tenantScope(d1, job.tenantId), services, job.itemIds);
      return;
    case "summarize":
      await autoSummarize(tenantScope(d1, job.tenantId), services, [job]);
      return;
    case "link":
      await autoLinkItems(tenantScope(d1, job.tenantId), services, job.itemIds);
      return;
    case "reindex":
      await reindexHeartbeat(d1, Date.now());
      if (await reindexLegacyBatches(d1, REINDEX_BATCHES_PER_JOB)) await new QueueProducer(env.JOBS).send([job]);
      return;
    case "move": {
      const run = await runMove(env, job.tenantId, MOVE_PAGES_PER_JOB);
      if (isActive(run.state)) await env.JOBS.send(job, { delaySeconds: Math.ceil(run.waitMs / 1000) });
      return;
    }
    case "delete": {
      const run = await runDeletionSteps({ control: env.CONTROL, data: d1 }, services, job, (keyIds) => deleteGrantsOfKeys(env, keyIds), DELETION_STEPS_PER_JOB);
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
