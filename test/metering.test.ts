import { createExecutionContext, createMessageBatch, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { meteredAi, meteredQueue } from "../src/adapters/metered-bindings";
import { hasKnownPrice, unpricedModels } from "../src/adapters/model-prices";
import { UnitMeter } from "../src/billable-units";
import { readConfig } from "../src/config";
import { usageBuffer } from "../src/control/usage-buffer";
import type { Env } from "../src/env";
import worker from "../src/index";
import { DEAD_LETTER_QUEUE } from "../src/jobs/consumer";
import type { JobMessage } from "../src/messages";
import { admin, call, newTenant } from "./helpers";
import { authorizeWithKey, exchangeCode, mcpTool, toolResult } from "./oauth-flow";

type Units = Record<string, number>;
type Report = { jobs: (Units & { job: string; runs: number })[] };

/** The tenant's report once `job` shows with `unit` above 0, writing the isolate's held overhead as it waits. */
async function untilCharged(apiKey: string, job: string, unit: string): Promise<Units & { runs: number }> {
  const started = Date.now();
  for (;;) {
    await usageBuffer.write(env as unknown as Env);
    const report = await call<Report>(apiKey, "get_usage_report", {});
    const row = report.jobs.find((r) => r.job === job);
    if (row && row[unit]! > 0) return row;
    if (Date.now() - started > 15_000) throw new Error(`no ${unit} for ${job}: ${JSON.stringify(report.jobs)}`);
    await new Promise((r) => setTimeout(r, 500)); // under the key's 40 calls a minute
  }
}

/** A job message of about `bytes` bytes of JSON: an embed job naming that many characters of item ids. */
function jobOfSize(tenantId: string, bytes: number): Extract<JobMessage, { type: "embed" }> {
  const ids = Array.from({ length: Math.ceil(bytes / 40) }, () => `it_missing_${crypto.randomUUID()}`);
  return { type: "embed", tenantId, itemIds: ids };
}

async function deliver(queue: string, messages: { body: JobMessage; attempts: number }[]): Promise<void> {
  const batch = createMessageBatch<JobMessage>(
    queue,
    messages.map((m, i) => ({ id: `m-${Date.now()}-${i}`, timestamp: new Date(), ...m })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env as unknown as Env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("metering: what a request spends beside its tool calls", () => {
  it("a call's control-database reads (its key's lookup and last use) reach get_usage_report as `requests`", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_list", {});
    const requests = await untilCharged(t.apiKey, "requests", "d1_rows_read");
    expect(requests.d1_rows_read).toBeGreaterThan(0);
  });

  it("an OAuth call's read of OAUTH_KV is counted for its tenant", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    await toolResult(await mcpTool(tokens.access_token, "memory_list", {}, "?toolsets=all"));
    const requests = await untilCharged(t.apiKey, "requests", "kv_reads");
    expect(requests.kv_reads).toBeGreaterThanOrEqual(1);
  });
});

describe("metering: queue operations per 64 KB, redeliveries and dead letters", () => {
  it("a message over 64 KB is two units an operation: its write, read and delete are 6", async () => {
    const meter = new UnitMeter();
    const sent: unknown[] = [];
    const queue = meteredQueue({ send: async (m: unknown) => void sent.push(m) } as unknown as Queue<unknown>, meter);
    await queue.send({ text: "x".repeat(1_000) });
    expect(meter.current).toMatchObject({ queueSends: 1, queueOperations: 3 });
    await queue.send({ text: "x".repeat(70 * 1024) });
    expect(meter.current).toMatchObject({ queueSends: 2, queueOperations: 3 + 6 });
  });

  it("a redelivered job's read is charged to its run; a dead letter's write, read and delete to its tenant", async () => {
    const [first, retried] = [await newTenant(), await newTenant()];
    // 70 KB: two 64 KB units an operation. Its items do not exist: each job runs the same and finds nothing to embed.
    const big = jobOfSize(first.tenantId, 70 * 1024);
    await deliver("context-edge-jobs", [{ body: big, attempts: 1 }]);
    await deliver("context-edge-jobs", [{ body: { ...big, tenantId: retried.tenantId }, attempts: 3 }]);
    const once = await untilCharged(first.apiKey, "embed", "d1_rows_read");
    const again = await untilCharged(retried.apiKey, "embed", "d1_rows_read");
    expect(again.queue_operations! - once.queue_operations!).toBe(2);

    const t = first;
    await deliver(DEAD_LETTER_QUEUE, [{ body: big, attempts: 1 }]);
    const dead = await untilCharged(t.apiKey, "dead_letter", "queue_operations");
    expect(dead).toMatchObject({ runs: 1, queue_operations: 6 });
    expect(dead.d1_rows_written).toBeGreaterThan(0); // its job_failures row in the control database
  });
});

describe("metering: Workers AI", () => {
  it("every model the configuration calls by default has a price; a summary by llama-3.1-8b-instruct costs neurons", async () => {
    const config = readConfig({ ...env, EMBEDDER: "workers-ai", SUMMARIZER: "workers-ai" } as unknown as Env);
    expect(config.summaryModel).toBe("@cf/meta/llama-3.1-8b-instruct");
    expect(unpricedModels(config)).toEqual([]);
    expect(hasKnownPrice(config.embeddingModel)).toBe(true);
    const meter = new UnitMeter();
    const ai = meteredAi(
      {
        run: async () => ({ response: "a summary", usage: { prompt_tokens: 2_000, completion_tokens: 200 } }),
      } as never,
      meter,
    );
    await ai.run(config.summaryModel as never, { messages: [] } as never);
    // 2,000 x 25,608 / 1 M + 200 x 75,147 / 1 M = 51.2 + 15.0, rounded up.
    expect(meter.current.aiNeurons).toBe(67);
  });
});

describe("metering: the deployment's total against the account's allowances", () => {
  it("GET /admin/usage sums every tenant's units over all shards, not one tenant's", async () => {
    const tenants = [await newTenant(), await newTenant()];
    const totals: Units[] = [];
    for (const t of tenants) {
      await call(t.apiKey, "memory_store", { content: "a note for the deployment's total" });
      await untilCharged(t.apiKey, "requests", "d1_rows_read");
      totals.push((await call<{ totals: Units }>(t.apiKey, "get_usage_report", {})).totals);
    }
    const usage = await (await admin("GET", "/usage?days=1")).json<{
      tenants: number;
      shards: number;
      totals: Units;
    }>();
    expect(usage.shards).toBeGreaterThanOrEqual(2);
    expect(usage.tenants).toBeGreaterThanOrEqual(2);
    for (const unit of ["d1_rows_read", "d1_rows_written"])
      expect(usage.totals[unit]).toBeGreaterThan(totals[0]![unit]! + totals[1]![unit]! - 1);
    expect(usage.totals.free_plan_daily).toMatchObject({ d1_rows_written: 100_000 });
    expect((await admin("GET", "/usage", undefined, "not-the-token")).status).toBe(401);
  });
});
