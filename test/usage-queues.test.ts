import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { QueueUsageLog } from "../src/adapters/usage-queue";
import { noUnits } from "../src/billable-units";
import worker from "../src/index";
import type { UsageMessage } from "../src/messages";
import { BASE, newTenant } from "./helpers";

// The usage log no longer travels by queue (control/usage-buffer.ts): requests send nothing, and the consumer stays to
// write what the previous version sent (USAGE, USAGE_<name>) until the queues are drained.
function capturingQueue(refuse = false) {
  const sent: UsageMessage[] = [];
  const queue = {
    send: async (body: UsageMessage) => {
      if (refuse) throw new Error("Too Many Requests: queue context-edge-usage is over its 5,000 messages a second");
      sent.push(body);
    },
    sendBatch: async (messages: { body: UsageMessage }[]) => void sent.push(...messages.map((m) => m.body)),
  };
  return { sent, queue: queue as unknown as Queue<UsageMessage> };
}

async function ping(overrides: Partial<typeof env>, apiKey: string): Promise<void> {
  const ctx = createExecutionContext();
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ping", arguments: {} } });
  const response = await worker.fetch!(
    new Request(`${BASE}/jsonrpc`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body,
    }) as any,
    { ...env, ...overrides },
    ctx,
  );
  expect(response.status).toBe(200);
  await waitOnExecutionContext(ctx);
}

/** Delivers what a usage queue carried to the Worker's consumer, as the queue named `queue` would. */
async function consume(queue: string, messages: UsageMessage[]): Promise<void> {
  const batch = createMessageBatch<UsageMessage>(
    queue,
    messages.map((body, i) => ({ id: `${queue}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  await waitOnExecutionContext(ctx);
  const result = await getQueueResult(batch, ctx);
  expect(result.retryMessages).toEqual([]);
  expect(result.explicitAcks).toHaveLength(messages.length);
}

describe("usage queues", () => {
  it("a request sends no usage message: its calls reach the hourly aggregates from the isolate's buffer", async () => {
    const t = await newTenant();
    const [first, second] = [capturingQueue(), capturingQueue()];
    for (let i = 0; i < 5; i++) await ping({ USAGE: first.queue, USAGE_1: second.queue }, t.apiKey);
    expect(first.sent.length + second.sent.length).toBe(0);
    expect(await pings(t.db, t.tenantId)).toBe(5);
  });

  it("messages sent before the buffer (a deploy's backlog) are still written by the consumer, each call once", async () => {
    const t = await newTenant();
    const { sent, queue } = capturingQueue();
    const calls = Array.from({ length: 4 }, (_, i) => ({
      keyId: t.keyId,
      tool: "ping",
      project: null,
      conversationId: null,
      startedAt: Date.now() + i,
      durationMs: 3,
      errorCode: null,
      units: { ...noUnits(), d1RoundTrips: 1 },
    }));
    await new QueueUsageLog([queue]).record(t.tenantId, calls);
    await consume("context-edge-usage", sent);
    expect(await pings(t.db, t.tenantId)).toBe(4);
    const rows = await t.db
      .prepare("SELECT COUNT(*) AS n FROM tool_calls WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first("n");
    expect(rows).toBe(4); // the old path's rows, a call each: what the buffer no longer writes
  });
});

async function pings(db: D1Database, tenantId: string): Promise<number> {
  const row = await db
    .prepare(
      "SELECT COALESCE(SUM(calls), 0) AS n FROM usage_hours WHERE tenant_id = ? AND source = 'tool' AND name = 'ping'",
    )
    .bind(tenantId)
    .first<{ n: number }>();
  return row!.n;
}
