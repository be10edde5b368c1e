import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { OpenAiCompatibleEmbedder } from "../src/adapters/openai-embedder";
import { UnitMeter } from "../src/billable-units";
import { shardDatabase, shardNames } from "../src/control/shards";
import { meteredD1 } from "../src/db/metered-d1";
import worker from "../src/index";
import { backoffSeconds, MAX_ATTEMPTS } from "../src/jobs/consumer";
import type { JobMessage } from "../src/messages";
import { admin, call, newTenant, tenantDb, waitForEmbeddings } from "./helpers";

const vectorCount = async (tenantId: string) =>
  (await (
    await tenantDb(tenantId)
  )
    .prepare("SELECT COUNT(*) AS n FROM local_vectors WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ n: number }>())!.n;

async function deliver(
  messages: { id: string; attempts: number; body: JobMessage }[],
  overrides: Partial<typeof env> = {},
  queue = "context-edge-jobs",
) {
  const batch = createMessageBatch<JobMessage>(
    queue,
    messages.map((m) => ({ ...m, timestamp: new Date() })),
  );
  const retries = batch.messages.map((m) => vi.spyOn(m, "retry"));
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return {
    ...(await getQueueResult(batch, ctx)),
    retryOptions: retries.flatMap((spy) => spy.mock.calls.map((c) => c[0])),
  };
}

afterEach(() => vi.restoreAllMocks());

describe("a batch's embed and link jobs of one tenant run merged", () => {
  /** A queue binding that keeps what is sent (the link jobs an embed job queues). */
  const keptQueue = (sent: JobMessage[]) => ({
    sendBatch: async (messages: { body: JobMessage }[]) => void sent.push(...messages.map((m) => m.body)),
  });
  const tripsOf = async (messages: { id: string; attempts: number; body: JobMessage }[]) => {
    const meter = new UnitMeter();
    const sent: JobMessage[] = [];
    // every shard the jobs may work on (the control lookup of the tenant's shard is cached, so it is not the jobs' cost)
    const d1s = Object.fromEntries(
      shardNames(env).map((shard) => [shard, meteredD1(shardDatabase(env, shard), meter)]),
    );
    const result = await deliver(messages, { ...d1s, JOBS: keptQueue(sent) as unknown as Queue });
    return { trips: meter.current.d1RoundTrips, acks: result.explicitAcks, sent };
  };

  it("four embed messages and four link messages cost the D1 round trips of one each", async () => {
    const t = await newTenant();
    const { ids } = await call(t.apiKey, "memory_batch_store", {
      memories: [
        "Refunds take five business days",
        "Refunds take five business days to arrive",
        "Invoices are sent monthly",
        "Invoices are sent on the first of the month",
      ].map((content) => ({ content })),
    });
    await waitForEmbeddings(t.tenantId);
    // and the real consumer's link job too, so it cannot run between the two measurements
    await expect
      .poll(
        () =>
          t.db
            .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL")
            .bind(t.tenantId)
            .first("n"),
        { timeout: 15_000 },
      )
      .toBe(0);
    const one = await tripsOf([
      { id: "e-all", attempts: 1, body: { type: "embed", tenantId: t.tenantId, itemIds: ids } },
      { id: "l-all", attempts: 1, body: { type: "link", tenantId: t.tenantId, itemIds: ids } },
    ]);
    const four = await tripsOf([
      ...ids.map((id: string, i: number) => ({
        id: `e-${i}`,
        attempts: 1,
        body: { type: "embed" as const, tenantId: t.tenantId, itemIds: [id] },
      })),
      ...ids.map((id: string, i: number) => ({
        id: `l-${i}`,
        attempts: 1,
        body: { type: "link" as const, tenantId: t.tenantId, itemIds: [id] },
      })),
    ]);
    expect(four.acks.sort()).toEqual(["e-0", "e-1", "e-2", "e-3", "l-0", "l-1", "l-2", "l-3"]);
    expect(four.trips).toBe(one.trips);
    expect(one.trips).toBeGreaterThan(0);
    // the merged embed queued one link job for its four items, as the single message did
    expect(four.sent).toEqual([{ type: "link", tenantId: t.tenantId, itemIds: ids }]);
    expect(await vectorCount(t.tenantId)).toBe(4);
    const linked = await t.db
      .prepare("SELECT COUNT(*) AS n FROM links WHERE tenant_id = ? AND relationship_type = 'similar_content'")
      .bind(t.tenantId)
      .first("n");
    expect(linked).toBeGreaterThan(0);
  });

  it("jobs of different tenants stay apart, and a merged embed queues its links 100 items a message", async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const many = Array.from({ length: 150 }, (_, i) => ({ content: `note ${i} about topic ${i % 7}` }));
    const aIds = [
      ...(await call(a.apiKey, "memory_batch_store", { memories: many.slice(0, 100) })).ids,
      ...(await call(a.apiKey, "memory_batch_store", { memories: many.slice(100) })).ids,
    ];
    const bIds = (await call(b.apiKey, "memory_batch_store", { memories: [{ content: "only in b" }] })).ids;
    await waitForEmbeddings(a.tenantId);
    await waitForEmbeddings(b.tenantId);
    const run = await tripsOf([
      { id: "a-1", attempts: 1, body: { type: "embed", tenantId: a.tenantId, itemIds: aIds.slice(0, 100) } },
      { id: "b-1", attempts: 1, body: { type: "embed", tenantId: b.tenantId, itemIds: bIds } },
      { id: "a-2", attempts: 1, body: { type: "embed", tenantId: a.tenantId, itemIds: aIds.slice(100) } },
    ]);
    expect(run.acks.sort()).toEqual(["a-1", "a-2", "b-1"]);
    expect(run.sent).toEqual([
      { type: "link", tenantId: a.tenantId, itemIds: aIds.slice(0, 100) },
      { type: "link", tenantId: a.tenantId, itemIds: aIds.slice(100) },
      { type: "link", tenantId: b.tenantId, itemIds: bIds },
    ]);
  });

  it("when the merged job fails, its messages run one by one and only the failing one is retried", async () => {
    const t = await newTenant();
    const { ids } = await call(t.apiKey, "memory_batch_store", {
      memories: [{ content: "fine one" }, { content: "poison pill" }, { content: "fine two" }],
    });
    await waitForEmbeddings(t.tenantId);
    vi.spyOn(globalThis, "fetch").mockImplementation(async (_url, init) => {
      const input = JSON.parse(String(init!.body)).input as string[];
      if (input.some((text) => text.includes("poison"))) return new Response("cannot embed this", { status: 400 });
      return Response.json({
        data: input.map((_, index) => ({
          index,
          embedding: Array.from({ length: 256 }, (_, d) => (d === index ? 1 : 0)),
        })),
      });
    });
    const result = await deliver(
      ids.map((id: string, i: number) => ({
        id: `m-${i}`,
        attempts: 1,
        body: { type: "embed" as const, tenantId: t.tenantId, itemIds: [id] },
      })),
      { EMBEDDER: "openai", OPENAI_BASE_URL: "http://embeddings.test/v1" },
    );
    expect(result.explicitAcks.sort()).toEqual(["m-0", "m-2"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m-1"]);
  });
});

describe("embedding jobs", () => {
  it("the real queue consumer embeds new items; a re-delivered message changes nothing", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_batch_store", {
      memories: [{ content: "first fact" }, { content: "second fact" }],
    });
    await waitForEmbeddings(t.tenantId);
    expect(await vectorCount(t.tenantId)).toBe(2);
    const before = await t.db
      .prepare("SELECT vector FROM local_vectors WHERE tenant_id = ? ORDER BY chunk_id")
      .bind(t.tenantId)
      .all();

    const result = await deliver([
      { id: "dup-1", attempts: 1, body: { type: "embed", tenantId: t.tenantId, itemIds: stored.ids } },
    ]);
    expect(result.explicitAcks).toEqual(["dup-1"]);
    expect(await vectorCount(t.tenantId)).toBe(2);
    const after = await t.db
      .prepare("SELECT vector FROM local_vectors WHERE tenant_id = ? ORDER BY chunk_id")
      .bind(t.tenantId)
      .all();
    expect(after.results).toEqual(before.results);
  });

  it("retries with backoff when the embedder fails, and records the failure on the last try", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_store", { content: "needs an embedding" });
    await waitForEmbeddings(t.tenantId);
    vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response("model overloaded", { status: 503 }));
    const failing = { EMBEDDER: "openai", OPENAI_BASE_URL: "http://embeddings.test/v1" };
    const body: JobMessage = { type: "embed", tenantId: t.tenantId, itemIds: [stored.id] };

    const first = await deliver([{ id: "fail-1", attempts: 1, body }], failing);
    expect(first.explicitAcks).toEqual([]);
    expect(first.retryMessages.map((m) => m.msgId)).toEqual(["fail-1"]);
    expect(first.retryOptions).toEqual([{ delaySeconds: 2 }]);
    expect(backoffSeconds(1)).toBe(2);
    expect(backoffSeconds(4)).toBe(16);
    expect(backoffSeconds(20)).toBe(300);
    // Retries span over an hour before a dead letter: a dependency's outage shorter than that loses no job.
    const waited = Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => backoffSeconds(i + 1)).reduce((a, b) => a + b, 0);
    expect(waited).toBeGreaterThan(3600);
    expect(
      await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM job_failures WHERE message_id = 'fail-1'").first("n"),
    ).toBe(0);

    const last = await deliver([{ id: "fail-1", attempts: MAX_ATTEMPTS, body }], failing);
    expect(last.retryMessages).toHaveLength(1); // the queue dead-letters it after max_retries
    const failure = await env.CONTROL.prepare(
      "SELECT tenant_id, job_type, attempts, last_error FROM job_failures WHERE message_id = 'fail-1'",
    ).first<any>();
    expect(failure).toMatchObject({ tenant_id: t.tenantId, job_type: "embed", attempts: MAX_ATTEMPTS });
    expect(failure.last_error).toContain("503");

    const dead = await deliver([{ id: "fail-1", attempts: MAX_ATTEMPTS, body }], {}, "context-edge-jobs-dlq");
    expect(dead.explicitAcks).toEqual(["fail-1"]);
    expect(
      await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM job_failures WHERE message_id = 'fail-1'").first("n"),
    ).toBe(1);

    // an operator sees it; a tenant key cannot
    const listed = await (await admin("GET", "/job-failures")).json<any>();
    expect(listed.failures.find((f: any) => f.message_id === "fail-1")).toMatchObject({
      tenant_id: t.tenantId,
      job_type: "embed",
      attempts: MAX_ATTEMPTS,
      body,
    });
    expect((await admin("GET", "/job-failures", undefined, t.apiKey)).status).toBe(403);
  });

  it("embeds through an OpenAI-compatible endpoint", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_batch_store", {
      memories: [{ content: "alpha" }, { content: "beta" }],
    });
    await waitForEmbeddings(t.tenantId);
    await t.db.prepare("DELETE FROM local_vectors WHERE tenant_id = ?").bind(t.tenantId).run();
    const fetchSpy = vi.spyOn(globalThis, "fetch").mockImplementation(async (_url, init) => {
      const input = JSON.parse(String(init!.body)).input as string[];
      const data = input
        .map((_, index) => ({ index, embedding: Array.from({ length: 256 }, (_, d) => (d === index ? 1 : 0)) }))
        .reverse();
      return Response.json({ data });
    });
    const result = await deliver(
      [{ id: "oa-1", attempts: 1, body: { type: "embed", tenantId: t.tenantId, itemIds: stored.ids } }],
      {
        EMBEDDER: "openai",
        OPENAI_BASE_URL: "http://embeddings.test/v1/",
        OPENAI_API_KEY: "sk-test",
        EMBEDDING_MODEL: "nomic-embed-text",
      },
    );
    expect(result.explicitAcks).toEqual(["oa-1"]);
    const [url, init] = fetchSpy.mock.calls[0]!;
    expect(url).toBe("http://embeddings.test/v1/embeddings");
    expect(new Headers(init!.headers).get("authorization")).toBe("Bearer sk-test");
    expect(JSON.parse(String(init!.body))).toEqual({ model: "nomic-embed-text", input: ["alpha", "beta"] });
    expect(await vectorCount(t.tenantId)).toBe(2);
  });

  it("calls the platform's own fetch as a plain function (workerd refuses it as a method: 'Illegal invocation')", async () => {
    // No mock here: a spied fetch is a plain function and takes any `this`, which is how calling the real one as the
    // embedder's method went unseen until the first real endpoint. Nothing listens on port 9, so the call goes out
    // and fails as a network error would.
    const embedder = new OpenAiCompatibleEmbedder("http://127.0.0.1:9/v1", undefined, "any-model", 4);
    const failure = await embedder.embed(["alpha"]).then(
      () => null,
      (error: unknown) => String(error),
    );
    expect(failure).not.toBeNull();
    expect(failure).not.toContain("Illegal invocation");
  });

  it("the cron sweep also re-queues lost summaries and auto-links", async () => {
    const t = await newTenant();
    const [a, b] = (
      await call(t.apiKey, "memory_batch_store", {
        memories: [
          { content: "Refunds take five business days" },
          { content: "Refunds take five business days to arrive" },
        ],
      })
    ).ids;
    for (let i = 0; i < 5; i++)
      await call(t.apiKey, "add_message", {
        contextId: "lost-summary",
        message: `turn ${i} about refunds`,
        role: "user",
      });
    await expect
      .poll(() => t.db.prepare("SELECT COUNT(*) AS n FROM summaries WHERE tenant_id = ?").bind(t.tenantId).first("n"), {
        timeout: 15_000,
      })
      .toBe(1);
    await expect
      .poll(
        () =>
          t.db
            .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL")
            .bind(t.tenantId)
            .first("n"),
        { timeout: 15_000 },
      )
      .toBe(0);
    const old = Date.now() - 3_600_000;
    await t.db.batch([
      t.db.prepare("DELETE FROM summaries WHERE tenant_id = ?").bind(t.tenantId),
      t.db
        .prepare(
          "UPDATE conversations SET summarized_count = 0, summarized_tokens = 0, updated_at = ? WHERE tenant_id = ?",
        )
        .bind(old, t.tenantId),
      t.db.prepare("DELETE FROM links WHERE tenant_id = ?").bind(t.tenantId),
      t.db.prepare("UPDATE items SET linked_at = NULL, created_at = ? WHERE tenant_id = ?").bind(old, t.tenantId),
    ]);
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "*/15 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    await expect
      .poll(() => t.db.prepare("SELECT COUNT(*) AS n FROM summaries WHERE tenant_id = ?").bind(t.tenantId).first("n"), {
        timeout: 15_000,
      })
      .toBe(1);
    await expect
      .poll(
        () =>
          t.db
            .prepare("SELECT COUNT(*) AS n FROM links WHERE tenant_id = ? AND source_id IN (?, ?)")
            .bind(t.tenantId, a, b)
            .first("n"),
        { timeout: 15_000 },
      )
      .toBeGreaterThan(0);
  }, 60_000);

  it("the cron sweep re-queues items whose job was lost", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_store", { content: "lost in the queue" });
    await waitForEmbeddings(t.tenantId);
    await t.db.batch([
      t.db
        .prepare("UPDATE items SET embedded_at = NULL, created_at = ? WHERE id = ?")
        .bind(Date.now() - 3_600_000, stored.id),
      t.db.prepare("DELETE FROM local_vectors WHERE tenant_id = ?").bind(t.tenantId),
    ]);
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "*/15 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    await waitForEmbeddings(t.tenantId);
    expect(await vectorCount(t.tenantId)).toBe(1);
  });
});
