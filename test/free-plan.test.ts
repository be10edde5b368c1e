import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { checkedEnv } from "../src/checked-env";
import { readMove } from "../src/control/move-records";
import { PURGE_AFTER_MS, runMove } from "../src/control/moves";
import { shardDatabase } from "../src/control/shards";
import { TENANT_TABLES_TO_MOVE } from "../src/control/tenant-tables";
import { withQueryBudget } from "../src/db/invocation-queries";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import { FakeVectorize } from "./fakes/fake-vectorize";
import {
  ADMIN_TOKEN,
  BASE,
  call,
  newKey,
  newTenant,
  type RpcResponse,
  type TestTenant,
  tenantDb,
  usageLogSettled,
  waitForEmbeddings,
} from "./helpers";
import { adminWith, chunkIdsOf, deliverJobs, lostQueue, populate } from "./ownership-fixtures";

// D1's queries per invocation on the Free plan (50: D1_QUERIES_PER_INVOCATION=50, docs/limits.md). Every request,
// queue batch and cron run here goes through the Worker's entries with the budget set for it alone, and the work
// that needs more than one invocation completes over several instead of failing with an internal error.

const FREE = { D1_QUERIES_PER_INVOCATION: "50" };
const DIMS = 256;

type Call = {
  jsonrpc: "2.0";
  id: string | number;
  method: "tools/call";
  params: { name: string; arguments: Record<string, unknown> };
};
const toolCall = (id: string | number, name: string, args: Record<string, unknown>): Call => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

/** A JSON-RPC batch through the Worker's entry with the Free plan's budget. */
async function freeBatch(apiKey: string, calls: Call[]): Promise<RpcResponse[]> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request(`${BASE}/jsonrpc`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(calls),
    }),
    { ...env, ...FREE },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  expect(response.status).toBe(200);
  return response.json<RpcResponse[]>();
}

/** The budget's refusal as a client sees it: retryable, naming the limit. */
function expectBudgetRefusal(answer: RpcResponse) {
  expect(answer.error).toMatchObject({
    code: -32000,
    data: {
      code: "UNAVAILABLE",
      details: {
        reason: "d1_queries_per_invocation",
        limit_name: "D1_QUERIES_PER_INVOCATION",
        limit: 50,
        retryable: true,
        retry_after_seconds: 0,
      },
    },
  });
  expect(answer.error!.message).toContain("D1_QUERIES_PER_INVOCATION");
}

/**
 * Sends the calls, then again those answered with the budget's refusal, until all are answered (a fresh key a
 * request: the tests' per-key limit is 40 calls a minute). Returns the answers by id and the requests it took.
 */
async function sendUntilAnswered(
  t: TestTenant,
  calls: Call[],
): Promise<{ answers: Map<unknown, RpcResponse>; requests: number; refused: number }> {
  const answers = new Map<unknown, RpcResponse>();
  let pending = calls;
  let requests = 0;
  let refused = 0;
  while (pending.length > 0) {
    expect(++requests, "each request answers at least one call").toBeLessThanOrEqual(calls.length);
    const batch = await freeBatch((await newKey(t.tenantId)).apiKey, pending);
    const byId = new Map(batch.map((a) => [a.id, a]));
    const next: Call[] = [];
    pending.forEach((c, i) => {
      const answer = byId.get(c.id)!;
      expect(answer.error?.code, JSON.stringify(answer.error)).not.toBe(-32603);
      if (answer.error?.data?.details?.reason === "d1_queries_per_invocation") {
        expectBudgetRefusal(answer);
        // Refused calls are the tail: the batch runs in order until the budget is spent.
        expect(pending.slice(i).every((later) => byId.get(later.id)!.error !== undefined)).toBe(true);
        next.push(c);
        refused++;
      } else answers.set(c.id, answer);
    });
    expect(next.length).toBeLessThan(pending.length);
    pending = next;
  }
  return { answers, requests, refused };
}

describe("a JSON-RPC batch follows the budget", () => {
  it("40 searches: the calls the budget covers are answered, the rest refused retryably naming the limit; sent again, all are answered", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", {
      memories: ["ferry", "harbour", "lighthouse"].map((w) => ({ content: `the ${w} opens at dawn` })),
    });
    const searches = Array.from({ length: 40 }, (_, i) =>
      toolCall(i, "search", { query: ["ferry", "harbour", "lighthouse"][i % 3]! }),
    );
    const { answers, requests, refused } = await sendUntilAnswered(t, searches);
    expect(refused).toBeGreaterThan(0);
    expect(requests).toBeGreaterThan(1);
    for (const [i, answer] of answers)
      expect(answer.result.results[0].content, String(i)).toBe(
        `the ${["ferry", "harbour", "lighthouse"][Number(i) % 3]} opens at dawn`,
      );
    expect(answers.size).toBe(40);
  });

  it("18 messages in 6 contexts: each is written exactly once over the requests it takes", async () => {
    const t = await newTenant();
    const calls = ["a", "b", "c", "d", "e", "f"].flatMap((contextId) =>
      [1, 2, 3].map((n) =>
        toolCall(`${contextId}-${n}`, "add_message", { contextId, message: `${contextId} says ${n}`, role: "user" }),
      ),
    );
    const { answers, refused } = await sendUntilAnswered(t, calls);
    expect(refused).toBeGreaterThan(0);
    expect([...answers.values()].every((a) => a.result?.success === true)).toBe(true);
    const { results } = await t.db
      .prepare(
        "SELECT conversation_id AS c, COUNT(*) AS n, COUNT(DISTINCT content) AS d FROM items WHERE tenant_id = ? GROUP BY conversation_id ORDER BY c",
      )
      .bind(t.tenantId)
      .all();
    expect(results).toEqual(["a", "b", "c", "d", "e", "f"].map((c) => ({ c, n: 3, d: 3 })));
  });

  it("a call that needs more than a whole request's budget is refused as the deployment's limit, not retryable", async () => {
    const t = await newTenant();
    await call(t.apiKey, "search", { query: "warm the routes" }); // the key and route are cached: the budget goes to the call
    const ctx = createExecutionContext();
    const response = await worker.fetch(
      new Request(`${BASE}/jsonrpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(toolCall(1, "memory_store", { content: "too big for 3 queries" })),
      }),
      { ...env, D1_QUERIES_PER_INVOCATION: "3" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const answer = await response.json<RpcResponse>();
    expect(answer.error).toMatchObject({
      code: -32603,
      data: {
        code: "INTERNAL_ERROR",
        details: { limit_name: "D1_QUERIES_PER_INVOCATION", limit: 3, retryable: false },
      },
    });
    expect(answer.error!.message).toContain("D1's queries per invocation (3, D1_QUERIES_PER_INVOCATION)");
    expect(await t.db.prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?").bind(t.tenantId).first("n")).toBe(
      0,
    );
  });
});

describe("jobs size their work by the budget and queue the rest", () => {
  /** Delivers job messages through the Worker's queue entry with the Free budget; what they queued (a JOBS that keeps it) and the result. */
  async function deliverFree(messages: JobMessage[], overrides: Partial<typeof env> = {}) {
    const lost = lostQueue();
    const batch = createMessageBatch<JobMessage>(
      "context-edge-jobs",
      messages.map((body, i) => ({ id: `free-${i}`, timestamp: new Date(), attempts: 1, body })),
    );
    const ctx = createExecutionContext();
    await worker.queue(batch, { ...env, ...FREE, ...overrides, JOBS: lost.binding }, ctx);
    await waitOnExecutionContext(ctx);
    return { sent: lost.sent, result: await getQueueResult(batch, ctx) };
  }

  /** Asks for a move of the tenant to the other shard through the admin route, with the Free budget; the move job it queued. */
  async function startMoveFree(t: { tenantId: string; shard: string }) {
    const target = t.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0";
    const started = lostQueue();
    const ctx = createExecutionContext();
    const response = await worker.fetch(
      new Request(`${BASE}/admin/tenants/${t.tenantId}/move`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ shard: target }),
      }),
      { ...env, ...FREE, JOBS: started.binding },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(response.status).toBe(202);
    return { target, sent: started.sent };
  }

  /** Summary versions per conversation of a tenant. */
  const versions = async (tenantId: string) =>
    (
      await (
        await tenantDb(tenantId)
      )
        .prepare(
          "SELECT conversation_id AS c, COUNT(*) AS n FROM summaries WHERE tenant_id = ? GROUP BY conversation_id ORDER BY c",
        )
        .bind(tenantId)
        .all<{ c: string; n: number }>()
    ).results;

  it("a merged summarize job of 51 conversations summarizes what the budget allows and queues the rest, until each has one version", async () => {
    const t = await newTenant();
    const ids = Array.from({ length: 51 }, (_, i) => `s${i}`);
    const opening = ids.map((contextId) =>
      toolCall(contextId, "add_message", { contextId, message: `${contextId} opens`, role: "user" }),
    );
    for (const part of [opening.slice(0, 30), opening.slice(30)]) await sendUntilAnswered(t, part);
    let pending: JobMessage[] = ids.map((conversationId) => ({
      type: "summarize",
      tenantId: t.tenantId,
      conversationId,
      messageCount: 1,
    }));
    const runs: number[] = [];
    while (pending.length > 0) {
      expect(runs.length).toBeLessThan(10);
      const { sent, result } = await deliverFree(pending);
      expect(result.explicitAcks.length).toBe(pending.length); // done or queued again: nothing failed
      expect(result.retryMessages).toEqual([]);
      runs.push(pending.length - sent.length);
      pending = sent;
    }
    expect(runs.length).toBeGreaterThan(2); // 3 queries a summary: ~15 an invocation
    expect(runs.every((n) => n > 0)).toBe(true);
    const done = await versions(t.tenantId);
    expect(done.length).toBe(51);
    expect(done.every((r) => r.n === 1)).toBe(true);
  });

  it("a batch whose groups need more than the budget runs what fits and sends the rest again, acknowledged, not failed", async () => {
    const tenants = await Promise.all(Array.from({ length: 12 }, () => newTenant()));
    for (const t of tenants) await call(t.apiKey, "add_message", { contextId: "c", message: "hello", role: "user" });
    const jobs: JobMessage[] = tenants.map((t) => ({
      type: "summarize",
      tenantId: t.tenantId,
      conversationId: "c",
      messageCount: 1,
    }));
    const { sent, result } = await deliverFree(jobs);
    expect(result.explicitAcks.length).toBe(12);
    expect(result.retryMessages).toEqual([]);
    expect(sent.length).toBeGreaterThan(0); // deferred to a new invocation
    expect(sent.length).toBeLessThan(12);
    const again = await deliverFree(sent);
    expect(again.sent).toEqual([]);
    for (const t of tenants) expect(await versions(t.tenantId)).toEqual([{ c: "c", n: 1 }]);
  });

  it("a link job over more projects than the budget covers links some projects' items and queues the rest, until all are linked", async () => {
    const t = await newTenant();
    const ids: string[] = [];
    for (let i = 0; i < 15; i++)
      ids.push(
        (
          await call(t.apiKey, "memory_store", {
            content: `the harbour crane number ${i} lifts containers`,
            namespace: `dock-${i}`,
          })
        ).id,
      );
    await waitForEmbeddings(t.tenantId);
    await t.db.prepare("UPDATE items SET linked_at = NULL WHERE tenant_id = ?").bind(t.tenantId).run();
    const unlinked = async () =>
      (await t.db
        .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL")
        .bind(t.tenantId)
        .first<number>("n"))!;
    let pending: JobMessage[] = [{ type: "link", tenantId: t.tenantId, itemIds: ids }];
    const runs: number[] = [];
    while (pending.length > 0) {
      expect(runs.length).toBeLessThan(10);
      const before = await unlinked();
      const { sent, result } = await deliverFree(pending);
      expect(result.retryMessages).toEqual([]);
      runs.push(before - (await unlinked()));
      pending = sent.filter((m) => m.type === "link");
    }
    expect(runs.length).toBeGreaterThan(1); // 15 projects: 8 + 4 a project is more than 50
    expect(runs.every((n) => n > 0)).toBe(true);
    expect(await unlinked()).toBe(0);
  });

  it("an embed job embeds groups while the budget covers one more and queues the rest", async () => {
    const t = await newTenant();
    const ids: string[] = [];
    for (let start = 0; start < 250; start += 50) {
      const memories = Array.from({ length: 50 }, (_, i) => ({
        content: `ledger line ${start + i} of the harbour accounts`,
      }));
      ids.push(...(await call((await newKey(t.tenantId)).apiKey, "memory_batch_store", { memories })).ids);
    }
    await waitForEmbeddings(t.tenantId);
    await t.db.prepare("UPDATE items SET embedded_at = NULL WHERE tenant_id = ?").bind(t.tenantId).run();
    const pendingItems = async () =>
      (await t.db
        .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NULL")
        .bind(t.tenantId)
        .first<number>("n"))!;
    // A budget of 12 holds the batch's shard lookup, the items' heads and a group of 100 or two, not all three.
    let pending: JobMessage[] = [{ type: "embed", tenantId: t.tenantId, itemIds: ids }];
    let jobs = 0;
    for (; pending.length > 0; jobs++) {
      expect(jobs).toBeLessThan(10);
      const { sent, result } = await deliverFree(pending, { D1_QUERIES_PER_INVOCATION: "12" });
      expect(result.retryMessages).toEqual([]);
      pending = sent.filter((m) => m.type === "embed");
    }
    expect(jobs).toBeGreaterThan(1);
    expect(await pendingItems()).toBe(0);
  });

  it("a tenant move copies in as many jobs as the budget needs, the sweep resumes it when its runner is lost, and nothing is lost", async () => {
    const t = await newTenant();
    await populate(t, "default", "osprey");
    await usageLogSettled(t.tenantId);
    const counts = async (db: D1Database) => {
      const out: Record<string, number> = {};
      for (const table of TENANT_TABLES_TO_MOVE)
        out[table.name] = (await db
          .prepare(`SELECT COUNT(*) AS n FROM ${table.name} WHERE tenant_id = ?`)
          .bind(t.tenantId)
          .first<number>("n"))!;
      return out;
    };
    const before = await counts(t.db);
    const { target, sent } = await startMoveFree(t);
    let pending: JobMessage[] = sent.filter((m) => m.type === "move");
    expect(pending).toEqual([{ type: "move", tenantId: t.tenantId }]);

    // One job runs what the budget allows and queues the next; then its runner is lost.
    const first = await deliverFree(pending);
    expect(first.result.retryMessages).toEqual([]);
    expect(first.sent).toEqual([{ type: "move", tenantId: t.tenantId }]);
    const cut = (await readMove(env.CONTROL, t.tenantId))!;
    expect(cut.state).toBe("copying");
    expect(cut.copied).toBeGreaterThan(0);

    // The 15-minute sweep (through the Worker's cron entry, Free budget) finds the stalled move and queues it.
    await env.CONTROL.prepare("UPDATE tenant_moves SET updated_at = updated_at - 3600000 WHERE tenant_id = ?")
      .bind(t.tenantId)
      .run();
    const swept = lostQueue();
    const cron = createExecutionContext();
    await worker.scheduled(
      createScheduledController({ cron: "*/15 * * * *" }),
      { ...env, ...FREE, JOBS: swept.binding },
      cron,
    );
    await waitOnExecutionContext(cron);
    pending = swept.sent.filter((m) => m.type === "move" && m.tenantId === t.tenantId);
    expect(pending).toEqual([{ type: "move", tenantId: t.tenantId }]);

    let jobs = 1;
    while (pending.length > 0 && (await readMove(env.CONTROL, t.tenantId))!.state !== "purging") {
      expect(++jobs).toBeLessThan(200);
      const run = await deliverFree(pending);
      expect(run.result.retryMessages).toEqual([]);
      pending = run.sent;
    }
    expect(jobs).toBeGreaterThanOrEqual(3); // a page is ~5 queries: the cut job, the resumed one, at least one more
    expect((await readMove(env.CONTROL, t.tenantId))!.state).toBe("purging");
    // The purge, its wait skipped with a clock moved past it, in Free budgets as the job would run it.
    const switched = (await readMove(env.CONTROL, t.tenantId))!.switched_at!;
    for (let i = 0; i < 100 && (await readMove(env.CONTROL, t.tenantId))!.state === "purging"; i++) {
      await withQueryBudget(50, () => runMove(checkedEnv(env), t.tenantId, 100, () => switched + PURGE_AFTER_MS + 1));
    }
    expect((await readMove(env.CONTROL, t.tenantId))!.state).toBe("done");
    // Every row arrived; the move's own jobs log what they spent as they go (usage_hours gains their hour's rows).
    const after = await counts(shardDatabase(env, target));
    expect({ ...after, usage_hours: 0 }).toEqual({ ...before, usage_hours: 0 });
    expect(after.usage_hours).toBeGreaterThanOrEqual(before.usage_hours!);
    expect(Object.values(await counts(t.db)).every((n) => n === 0)).toBe(true);
  }, 60_000);

  it("a move verifies a long usage log a page at a time: 26,000 logged calls (52 tally queries) pass under 50 a job", async () => {
    const t = await newTenant();
    await t.db
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 26000)
         INSERT INTO tool_calls (tenant_id, key_id, tool, project, conversation_id, started_at, duration_ms, error_code)
         SELECT ?1, 'key_seed', 'search', 'default', NULL, ?2 + i, 1.5, NULL FROM n`,
      )
      .bind(t.tenantId, Date.now() - 86_400_000)
      .run();
    const { target, sent } = await startMoveFree(t);
    let pending: JobMessage[] = sent.filter((m) => m.type === "move");
    let jobs = 0;
    while (pending.length > 0 && (await readMove(env.CONTROL, t.tenantId))!.state !== "purging") {
      expect(++jobs).toBeLessThan(100);
      const run = await deliverFree(pending);
      expect(run.result.retryMessages).toEqual([]); // no job ran out of queries
      pending = run.sent;
    }
    const move = (await readMove(env.CONTROL, t.tenantId))!;
    expect(move.state).toBe("purging");
    expect(JSON.parse(move.verified!).tool_calls).toMatchObject({ rows: 26_000 });
    expect(
      await shardDatabase(env, target)
        .prepare("SELECT COUNT(*) AS n FROM tool_calls WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first("n"),
    ).toBe(26_000);
  }, 60_000);

  it("a tenant deletion removes its Vectorize vectors over as many jobs as the budget needs", async () => {
    const fake = new FakeVectorize(DIMS);
    const overrides = { VECTOR_INDEX: "vectorize", VECTORIZE: fake as unknown as Vectorize };
    const doomed = await newTenant();
    const stored = await call(doomed.apiKey, "memory_batch_store", {
      memories: Array.from({ length: 30 }, (_, i) => ({ content: `doomed record ${i}` })),
    });
    await waitForEmbeddings(doomed.tenantId);
    await deliverJobs([{ type: "embed", tenantId: doomed.tenantId, itemIds: stored.ids }], overrides);
    const vectors = () => [...fake.vectors.keys()].filter((id) => id.startsWith(`${doomed.tenantId}:`));
    expect(vectors()).toHaveLength((await chunkIdsOf(doomed.tenantId)).length);

    const lost = lostQueue();
    expect(
      (await adminWith({ ...FREE, ...overrides, JOBS: lost.binding }, "DELETE", `/tenants/${doomed.tenantId}`)).status,
    ).toBe(202);
    let jobs = 0;
    for (let pending = lost.sent.filter((m) => m.type === "delete"); pending.length > 0; jobs++) {
      expect(jobs).toBeLessThan(50);
      const run = await deliverFree(pending, overrides);
      expect(run.result.retryMessages).toEqual([]);
      pending = run.sent.filter((m) => m.type === "delete");
    }
    expect(jobs).toBeGreaterThan(0);
    expect(
      await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM tenants WHERE id = ?").bind(doomed.tenantId).first("n"),
    ).toBe(0);
    expect(vectors()).toEqual([]);
  }, 60_000);
});
