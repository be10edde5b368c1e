import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import { BASE, newTenant } from "./helpers";

// A queue takes 5,000 messages a second and a write queues two jobs (embed, then link), so a deployment past ~2,500
// writes a second binds more job queues (JOBS, JOBS_<name>). Through the Worker's entries: writes' jobs spread over
// every queue, a queue that refuses passes its batch on, and each queue's consumer runs what it carries.
function capturingQueue(refuse = false) {
  const sent: JobMessage[] = [];
  const queue = {
    send: async (body: JobMessage) => void sent.push(body),
    sendBatch: async (messages: { body: JobMessage }[]) => {
      if (refuse) throw new Error("Too Many Requests: queue context-edge-jobs is over its 5,000 messages a second");
      sent.push(...messages.map((m) => m.body));
    },
  };
  return { sent, queue: queue as unknown as Queue<JobMessage> };
}

async function store(overrides: Partial<typeof env>, apiKey: string, content: string): Promise<void> {
  const ctx = createExecutionContext();
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "memory_store", arguments: { content } },
  });
  const response = await worker.fetch!(
    new Request(`${BASE}/jsonrpc`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body,
    }) as any,
    { ...env, ...overrides },
    ctx,
  );
  expect(((await response.json()) as { error?: unknown }).error).toBeUndefined();
  await waitOnExecutionContext(ctx);
}

/** Delivers what a job queue carried to the Worker's consumer, as the queue named `queue` would. */
async function consume(queue: string, messages: JobMessage[]): Promise<void> {
  const batch = createMessageBatch<JobMessage>(
    queue,
    messages.map((body, i) => ({ id: `${queue}-${Date.now()}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  await waitOnExecutionContext(ctx);
  expect((await getQueueResult(batch, ctx)).retryMessages).toEqual([]);
}

const unembedded = async (db: D1Database, tenantId: string) =>
  db.prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NULL").bind(tenantId).first("n");

describe("job queues", () => {
  it("writes' jobs spread over every job queue, and each queue's consumer runs them", async () => {
    const t = await newTenant();
    const [first, second] = [capturingQueue(), capturingQueue()];
    for (let i = 0; i < 20; i++)
      await store(
        { JOBS: first.queue, JOBS_1: second.queue },
        t.apiKey,
        `Field note ${i}: the heron came back to the pond.`,
      );
    const embeds = (sent: JobMessage[]) => sent.filter((m) => m.type === "embed" && m.tenantId === t.tenantId);
    expect(embeds(first.sent).length + embeds(second.sent).length).toBe(20);
    expect(embeds(first.sent).length).toBeGreaterThan(0); // all 20 on one queue: odds of 2 in a million
    expect(embeds(second.sent).length).toBeGreaterThan(0);
    expect(await unembedded(t.db, t.tenantId)).toBe(20);
    await consume("context-edge-jobs", embeds(first.sent));
    await consume("context-edge-jobs-1", embeds(second.sent));
    expect(await unembedded(t.db, t.tenantId)).toBe(0);
  });

  it("a job queue that refuses a batch (over its throughput) passes it to the next", async () => {
    const t = await newTenant();
    const [refusing, open] = [capturingQueue(true), capturingQueue()];
    for (let i = 0; i < 8; i++)
      await store({ JOBS: refusing.queue, JOBS_1: open.queue }, t.apiKey, `Tide table ${i}: low water at noon.`);
    const embeds = open.sent.filter((m) => m.type === "embed" && m.tenantId === t.tenantId);
    expect(embeds).toHaveLength(8);
    await consume("context-edge-jobs-1", embeds);
    expect(await unembedded(t.db, t.tenantId)).toBe(0);
  });
});
