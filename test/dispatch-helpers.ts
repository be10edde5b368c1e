import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import type { TestTenant } from "./helpers";

// A deployment driven by hand, as the Worker's entries see it: tool calls over /jsonrpc, crons and queue batches,
// with every job message the Worker sends kept (or refused while the queue is "down").

export type Deployment = { env: typeof env; sent: JobMessage[]; queue: "up" | "down" };

export function deployment(overrides: Record<string, unknown> = {}): Deployment {
  const d: Deployment = { env, sent: [], queue: "up" };
  const jobs = {
    sendBatch: async (messages: { body: JobMessage }[]) => {
      if (d.queue === "down") throw new Error("Queue sendBatch failed: Queue is overloaded. Please back off.");
      d.sent.push(...messages.map((m) => m.body));
    },
  };
  d.env = { ...env, JOB_DISPATCH: "per-minute", JOBS: jobs, ...overrides } as unknown as typeof env;
  return d;
}

/** A tools/call through the deployment, answered as it is: its result or its JSON-RPC error. */
export async function callToolRaw(d: Deployment, t: TestTenant, name: string, args: Record<string, unknown>) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request("http://localhost/jsonrpc", {
      method: "POST",
      headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    }),
    d.env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response.json<{ result?: Record<string, unknown>; error?: { message: string } }>();
}

export async function callTool(d: Deployment, t: TestTenant, name: string, args: Record<string, unknown>) {
  const body = await callToolRaw(d, t, name, args);
  expect(body.error).toBeUndefined();
  return body.result!;
}

export async function cron(d: Deployment, cron: string, at: number): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron, scheduledTime: at }), d.env, ctx);
  await waitOnExecutionContext(ctx);
}

/** The tenant's messages sent since the last look, taken. */
export function take(d: Deployment, t: TestTenant): JobMessage[] {
  const mine = d.sent.filter((m) => m.tenantId === t.tenantId);
  d.sent = d.sent.filter((m) => m.tenantId !== t.tenantId);
  return mine;
}

export async function deliver(d: Deployment, messages: JobMessage[]) {
  const batch = createMessageBatch<JobMessage>(
    "context-edge-jobs",
    messages.map((body, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, d.env, ctx);
  await waitOnExecutionContext(ctx);
  return getQueueResult(batch, ctx);
}
