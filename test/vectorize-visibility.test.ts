import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { shardDatabase, shardNames } from "../src/control/shards";
import worker from "../src/index";
import { RECENT_JOB_GRACE_MS, RECENT_JOBS_CRON } from "../src/jobs/recent-jobs";
import type { JobMessage } from "../src/messages";
import { FakeVectorize } from "./fakes/fake-vectorize";
import { newTenant } from "./helpers";

// Vectorize processes writes asynchronously: a vector is queryable seconds after its upsert. The link job runs a
// second after the embed job, so in production it may find no vector yet. Through the Worker's entries, with the
// Vectorize adapter over a fake that delays visibility: the link job leaves such items pending (never an error,
// never marked linked without links), and the minute pass's link job links them once their vectors are visible.

describe("Vectorize's delayed visibility", () => {
  beforeEach(async () => {
    for (const shard of shardNames(env))
      await shardDatabase(env, shard).prepare("DELETE FROM reconcile_state WHERE id = 2").run();
  });

  it("a link job before the vectors are visible leaves the items pending; the minute pass links them after", async () => {
    const t = await newTenant();
    const fake = new FakeVectorize(256, ["project"], { visibleAfterMs: 60_000 });
    const sent: JobMessage[] = [];
    const jobs = {
      sendBatch: async (messages: { body: JobMessage }[]) => void sent.push(...messages.map((m) => m.body)),
    };
    const production = { ...env, VECTOR_INDEX: "vectorize", VECTORIZE: fake, JOBS: jobs } as unknown as typeof env;
    const take = (type: JobMessage["type"]) =>
      sent.splice(0).filter((m) => m.type === type && m.tenantId === t.tenantId);
    const deliver = async (messages: JobMessage[]) => {
      const batch = createMessageBatch<JobMessage>(
        "context-edge-jobs",
        messages.map((body, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: 1, body })),
      );
      const ctx = createExecutionContext();
      await worker.queue(batch, production, ctx);
      await waitOnExecutionContext(ctx);
      return getQueueResult(batch, ctx);
    };

    const ctx = createExecutionContext();
    const body = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "memory_batch_store",
        arguments: {
          memories: [
            { content: "The red kayak is stored under the porch." },
            { content: "The red kayak is stored under the porch in winter." },
          ],
        },
      },
    };
    await worker.fetch(
      new Request("http://localhost/jsonrpc", {
        method: "POST",
        headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
      production,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const written = Date.now();

    expect((await deliver(take("embed"))).explicitAcks).toHaveLength(1);
    expect(fake.vectors.size).toBe(2); // upserted, not yet visible
    const unlinked = () =>
      t.db
        .prepare(
          "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NOT NULL AND linked_at IS NULL",
        )
        .bind(t.tenantId)
        .first<number>("n");
    expect((await deliver(take("link"))).explicitAcks).toHaveLength(1); // done, not failed
    expect(await unlinked()).toBe(2); // but nothing marked linked

    fake.processAll();
    const passCtx = createExecutionContext();
    await worker.scheduled(
      createScheduledController({ cron: RECENT_JOBS_CRON, scheduledTime: written + RECENT_JOB_GRACE_MS + 30_000 }),
      production,
      passCtx,
    );
    await waitOnExecutionContext(passCtx);
    const relinks = take("link");
    expect(relinks.flatMap((m) => (m.type === "link" ? m.itemIds : []))).toHaveLength(2);
    await deliver(relinks);
    expect(await unlinked()).toBe(0);
    const links = await t.db
      .prepare("SELECT COUNT(*) AS n FROM links WHERE tenant_id = ? AND relationship_type = 'similar_content'")
      .bind(t.tenantId)
      .first<number>("n");
    expect(links).toBeGreaterThan(0);
  });
});
