import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import { RECENT_JOB_GRACE_MS, RECENT_JOBS_CRON } from "../src/jobs/recent-jobs";
import type { JobMessage } from "../src/messages";
import { callWith, type RpcAnswer } from "./fault-helpers";
import { newKey, newTenant, waitForEmbeddings } from "./helpers";

// A mixed workload (stores, batch stores, chat messages, searches, context builds) with every dependency failing
// at random, retried as a client would on a retryable error; then the faults end and the minute pass runs.
// What must hold: every acknowledged write is stored exactly once, a refused one not at all (nor any part of it),
// reads never fail other than retryably, and after recovery every item is embedded with nothing dead-lettered.
// The figures are printed (the bench's `chaos` suite runs the same against a killed and restarted server).

const FAULTS = "d1:error=0.15,queue:error=0.4,kv:error=0.3,vectors:error=0.3,embedder:error=0.3";
const CALLS = 60;
const CLIENT_ATTEMPTS = 4;

type Op = { name: string; args: Record<string, unknown>; writes: string[] };

/** The i-th call of the workload; `writes` are the contents it stores (unique, so each can be counted). */
function op(i: number): Op {
  const fact = (n: number) =>
    `Chaos fact ${i}.${n}: locker ${100 + i} holds the spare ${["keys", "cables", "maps"][n % 3]}.`;
  switch (i % 5) {
    case 0:
      return { name: "memory_store", args: { content: fact(0), namespace: "chaos" }, writes: [fact(0)] };
    case 1:
      return {
        name: "memory_batch_store",
        args: { memories: [0, 1, 2].map((n) => ({ content: fact(n) })), namespace: "chaos" },
        writes: [0, 1, 2].map(fact),
      };
    case 2:
      return {
        name: "log_chat",
        args: { conversation_id: `chat-${i % 2}`, role: i % 4 === 2 ? "user" : "assistant", content: fact(0) },
        writes: [fact(0)],
      };
    case 3:
      return { name: "search", args: { query: `spare keys locker ${100 + i - 3}`, project: "chaos" }, writes: [] };
    default:
      return {
        name: "memory_context_build",
        args: { query: `Which locker holds the spare cables?`, namespace: "chaos", token_budget: 300 },
        writes: [],
      };
  }
}

describe("chaos: a mixed workload under a fault schedule", () => {
  it("loses no acknowledged write, duplicates none, writes no part of a refused one, and recovers every job", async () => {
    const t = await newTenant();
    // A fresh key every 30 calls: the tests' per-key rate limit is 40 a minute.
    let client = t;
    let spent = 0;
    const acknowledged: string[] = [];
    const refused: string[] = [];
    let retries = 0;
    let degraded = 0;
    const started = Date.now();
    for (let i = 0; i < CALLS; i++) {
      const { name, args, writes } = op(i);
      let answer: RpcAnswer = {};
      for (let attempt = 1; attempt <= CLIENT_ATTEMPTS; attempt++) {
        if (++spent % 30 === 0) client = { ...t, ...(await newKey(t.tenantId)) };
        answer = await callWith(FAULTS, client, name, args);
        if (!answer.error) break;
        // The only error a fault may cause is the retryable one.
        expect(answer.error.data?.code, `${name}: ${answer.error.message}`).toBe("UNAVAILABLE");
        expect(answer.error.data?.details.retry_after_seconds).toBe(2);
        if (attempt < CLIENT_ATTEMPTS) retries++;
      }
      if (answer.result?.degraded) degraded++;
      (answer.error ? refused : acknowledged).push(...writes);
    }

    const callsMs = Date.now() - started;
    const countOf = async (content: string) =>
      (await t.db
        .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND content = ?")
        .bind(t.tenantId, content)
        .first<number>("n"))!;
    const found = await Promise.all(acknowledged.map(countOf));
    const written = await Promise.all(refused.map(countOf));
    expect(found.filter((n) => n === 0)).toEqual([]); // nothing acknowledged is lost
    expect(found.filter((n) => n > 1)).toEqual([]); // nor stored twice
    expect(written.filter((n) => n > 0)).toEqual([]); // a refused call wrote nothing
    // No part of a write: every item has its chunks, every conversation counts exactly the messages it holds.
    const orphans = await t.db
      .prepare(
        "SELECT COUNT(*) AS n FROM items i WHERE tenant_id = ? AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.item_id = i.id)",
      )
      .bind(t.tenantId)
      .first<number>("n");
    expect(orphans).toBe(0);
    const miscounted = await t.db
      .prepare(
        "SELECT COUNT(*) AS n FROM conversations c WHERE tenant_id = ? AND message_count <> (SELECT COUNT(*) FROM items i WHERE i.tenant_id = c.tenant_id AND i.conversation_id = c.id)",
      )
      .bind(t.tenantId)
      .first<number>("n");
    expect(miscounted).toBe(0);

    // The faults end. Once the consumer has run what was queued, the items still pending are those whose job was lost
    // (its send failed); the minute pass must re-send exactly those, and the consumer embed them.
    const pendingIds = async () =>
      (
        await t.db
          .prepare("SELECT id FROM items WHERE tenant_id = ? AND embedded_at IS NULL ORDER BY id")
          .bind(t.tenantId)
          .all<{ id: string }>()
      ).results.map((r) => r.id);
    let lost = await pendingIds();
    for (let still = 0; still < 4; ) {
      await new Promise((r) => setTimeout(r, 500));
      const now = await pendingIds();
      still = now.length === lost.length ? still + 1 : 0;
      lost = now;
    }
    const resent: JobMessage[] = [];
    const forwarding = {
      sendBatch: async (messages: { body: JobMessage }[]) => (
        resent.push(...messages.map((m) => m.body)), env.JOBS.sendBatch(messages)
      ),
    };
    const ctx = createExecutionContext();
    const recovering = Date.now();
    await worker.scheduled(
      createScheduledController({ cron: RECENT_JOBS_CRON, scheduledTime: Date.now() + RECENT_JOB_GRACE_MS + 60_000 }),
      { ...env, JOBS: forwarding as unknown as Queue },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const resentIds = resent.flatMap((m) => (m.type === "embed" && m.tenantId === t.tenantId ? m.itemIds : [])).sort();
    expect(resentIds).toEqual(lost);
    await waitForEmbeddings(t.tenantId);
    const recoveredMs = Date.now() - recovering;
    const dead = await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM job_failures WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<number>("n");
    expect(dead).toBe(0);
    expect(acknowledged.length).toBeGreaterThan(0);
    console.log(
      `chaos (${FAULTS}): ${CALLS} calls in ${callsMs} ms, ${retries} client retries; ${acknowledged.length} acknowledged writes, ` +
        `${found.filter((n) => n === 1).length} found once, 0 duplicates; ${refused.length} refused after ${CLIENT_ATTEMPTS} tries, none written; ` +
        `${degraded} reads degraded to keyword; ${lost.length} items lost their embed job, all re-sent by the minute pass and embedded ${recoveredMs} ms after it; 0 dead letters`,
    );
    // About 90 requests, each waited for with its usage write (FLUSH_USAGE_MS), then the recovery: past 20 s under load.
  }, 60_000);
});
