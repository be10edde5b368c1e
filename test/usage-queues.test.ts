import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import type { UsageMessage } from "../src/messages";
import { BASE, newTenant } from "./helpers";

// A queue takes 5,000 messages a second and the usage log sends one a request, so a deployment past that binds more
// usage queues (USAGE, USAGE_<name>). Through the Worker's entries: requests spread over every queue, a queue that
// refuses passes its message on, and each queue's consumer writes what it carries; calls counted equal calls made.
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
  it("requests spread over every usage queue, and each queue's consumer writes its calls: none lost, none twice", async () => {
    const t = await newTenant();
    const [first, second] = [capturingQueue(), capturingQueue()];
    const overrides = { USAGE: first.queue, USAGE_1: second.queue };
    for (let i = 0; i < 20; i++) await ping(overrides, t.apiKey);
    expect(first.sent.length + second.sent.length).toBe(20);
    expect(first.sent.length).toBeGreaterThan(0); // all 20 on one queue: odds of 2 in a million
    expect(second.sent.length).toBeGreaterThan(0);
    await consume("context-edge-usage", first.sent);
    await consume("context-edge-usage-1", second.sent);
    expect(
      await t.db
        .prepare("SELECT COUNT(*) AS n FROM tool_calls WHERE tenant_id = ? AND tool = 'ping'")
        .bind(t.tenantId)
        .first("n"),
    ).toBe(20);
  });

  it("a usage queue that refuses a message (over its throughput) passes it to the next", async () => {
    const t = await newTenant();
    const [refusing, open] = [capturingQueue(true), capturingQueue()];
    for (let i = 0; i < 10; i++) await ping({ USAGE: refusing.queue, USAGE_1: open.queue }, t.apiKey);
    expect(open.sent).toHaveLength(10);
    await consume("context-edge-usage-1", open.sent);
    expect(
      await t.db
        .prepare("SELECT COUNT(*) AS n FROM tool_calls WHERE tenant_id = ? AND tool = 'ping'")
        .bind(t.tenantId)
        .first("n"),
    ).toBe(10);
  });
});
