import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readConfig } from "../src/config";
import { RECENT_JOBS_CRON } from "../src/jobs/recent-jobs";
import { callTool, cron, deliver, deployment, take } from "./dispatch-helpers";
import { FakeVectorize } from "./fakes/fake-vectorize";
import { newTenant, type TestTenant } from "./helpers";

// JOB_DISPATCH=per-minute, the default: writes send no job; the minute pass sends one new-items job per tenant for
// what was written since, which embeds, links and summarizes (extraction: test/extraction-dispatch.test.ts).

const count = (t: TestTenant, sql: string) => t.db.prepare(sql).bind(t.tenantId).first<number>("n");

describe("jobs dispatched per minute", () => {
  it("is the default, and a value it does not know is refused by name", () => {
    expect(readConfig({ ...env, JOB_DISPATCH: undefined }).jobDispatch).toBe("per-minute");
    expect(() => readConfig({ ...env, JOB_DISPATCH: "hourly" })).toThrow(/JOB_DISPATCH 'hourly'/);
  });

  it("logged turns send no job; the minute pass sends one for the tenant, which embeds, links and summarizes", async () => {
    const d = deployment();
    const t = await newTenant();
    const ids: string[] = [];
    // Turns logged with times long past: the pass follows the order of writing, not the turns' times.
    for (let i = 0; i < 6; i++) {
      const turn = await callTool(d, t, "log_chat", {
        conversation_id: "trip",
        role: i % 2 === 0 ? "user" : "assistant",
        content: `Turn ${i}: we planned the canoe trip to the lake for the second week of June.`,
        timestamp: `2023-05-0${i + 1}T10:00:00Z`,
      });
      ids.push(turn.message_id as string);
    }
    expect(take(d, t)).toEqual([]);

    await cron(d, RECENT_JOBS_CRON, Date.now() + 60_000);
    const sent = take(d, t);
    expect(sent).toEqual([{ type: "new-items", tenantId: t.tenantId, itemIds: ids }]);
    expect((await deliver(d, sent)).explicitAcks).toHaveLength(1);

    expect(await count(t, "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NULL")).toBe(0);
    // Vector-searchable: a minute's pass and the job's delivery after the write.
    const found = await callTool(d, t, "search", { query: "canoe trip to the lake in June", mode: "vector" });
    expect((found.results as { item_id: string }[]).map((r) => r.item_id)).toContain(ids[0]);
    expect(await count(t, "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL")).toBe(0);
    // Six messages cross MESSAGE_LIMIT_THRESHOLD (5): the job wrote the summary itself, with no message for it.
    expect(await count(t, "SELECT COUNT(*) AS n FROM summaries WHERE tenant_id = ?")).toBe(1);
    expect(take(d, t)).toEqual([]);
    // The next pass has moved past them.
    await cron(d, RECENT_JOBS_CRON, Date.now() + 120_000);
    expect(take(d, t)).toEqual([]);
  });

  it("two memories written in the same minute are linked to each other though Vectorize shows neither yet", async () => {
    const fake = new FakeVectorize(256, ["project"], { visibleAfterMs: 60_000 });
    const d = deployment({ VECTOR_INDEX: "vectorize", VECTORIZE: fake });
    const t = await newTenant();
    await callTool(d, t, "memory_batch_store", {
      memories: [
        { content: "The red kayak is stored under the porch." },
        { content: "The red kayak is stored under the porch in winter." },
      ],
    });
    expect(take(d, t)).toEqual([]);
    await cron(d, RECENT_JOBS_CRON, Date.now() + 60_000);
    const sent = take(d, t);
    expect(sent.map((m) => m.type)).toEqual(["new-items"]);
    await deliver(d, sent);
    expect(fake.vectors.size).toBe(2); // upserted, neither visible
    expect(
      await count(t, "SELECT COUNT(*) AS n FROM links WHERE tenant_id = ? AND relationship_type = 'similar_content'"),
    ).toBe(1);
    expect(await count(t, "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL")).toBe(0);
  });

  it("with few D1 queries an invocation, the job runs what fits and queues the rest, until all are embedded and linked", async () => {
    const d = deployment({ D1_QUERIES_PER_INVOCATION: "12" });
    const t = await newTenant();
    for (let p = 0; p < 5; p++)
      await callTool(d, t, "memory_batch_store", {
        namespace: `ledger-${p}`,
        memories: Array.from({ length: 50 }, (_, i) => ({
          content: `ledger line ${p * 50 + i} of the harbour accounts`,
        })),
      });
    await cron(d, RECENT_JOBS_CRON, Date.now() + 60_000);
    let pending = take(d, t);
    expect(pending).toHaveLength(1); // 250 items: one message
    let runs = 0;
    for (; pending.length > 0; runs++) {
      expect(runs).toBeLessThan(20);
      expect((await deliver(d, pending)).retryMessages).toEqual([]);
      pending = take(d, t);
    }
    expect(runs).toBeGreaterThan(1);
    expect(await count(t, "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NULL")).toBe(0);
    expect(await count(t, "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL")).toBe(0);
  });

  it("a pass that cannot send keeps its place: the next one sends what was written", async () => {
    const d = deployment();
    const t = await newTenant();
    const stored = await callTool(d, t, "memory_store", { content: "The spare key is under the blue flowerpot." });
    d.queue = "down";
    await cron(d, RECENT_JOBS_CRON, Date.now() + 60_000);
    d.queue = "up";
    await cron(d, RECENT_JOBS_CRON, Date.now() + 120_000);
    expect(take(d, t)).toEqual([{ type: "new-items", tenantId: t.tenantId, itemIds: [stored.id] }]);
  });

  it("a lost new-items job is sent again as one by the sweep", async () => {
    const d = deployment();
    const t = await newTenant();
    const stored = await callTool(d, t, "memory_store", { content: "The ladder hangs on the garage wall." });
    await cron(d, RECENT_JOBS_CRON, Date.now() + 60_000);
    take(d, t); // lost
    await cron(d, "*/15 * * * *", Date.now() + 11 * 60_000);
    expect(take(d, t)).toContainEqual({ type: "new-items", tenantId: t.tenantId, itemIds: [stored.id] });
  });

  it("with auto-linking off, embedding leaves an item waiting for nothing: the sweep finds nothing to send", async () => {
    const d = deployment({ USE_GRAPH_DB: "false" });
    const t = await newTenant();
    await callTool(d, t, "memory_store", { content: "The bike pump is behind the freezer." });
    await cron(d, RECENT_JOBS_CRON, Date.now() + 60_000);
    await deliver(d, take(d, t));
    expect(await count(t, "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NULL")).toBe(0);
    expect(await count(t, "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL")).toBe(0);
    expect(await count(t, "SELECT COUNT(*) AS n FROM links WHERE tenant_id = ?")).toBe(0);
    await cron(d, "*/15 * * * *", Date.now() + 11 * 60_000);
    expect(take(d, t)).toEqual([]);
  });

  it("items written after the newest ones were deleted, on the rowids they freed, are still sent", async () => {
    const d = deployment();
    const t = await newTenant();
    const store = async (content: string) => (await callTool(d, t, "memory_store", { content })).id as string;
    await store("The bread knife is in the second drawer.");
    await cron(d, RECENT_JOBS_CRON, Date.now() + 60_000);
    await deliver(d, take(d, t));
    const newest = [await store("The torch hangs by the back door."), await store("The fuses are above the meter.")];
    await cron(d, RECENT_JOBS_CRON, Date.now() + 120_000);
    await deliver(d, take(d, t));
    // Any deletion of the newest items (a tenant moved away, a project deleted), as the shard sees it.
    await t.db
      .prepare("DELETE FROM items WHERE id IN (SELECT value FROM json_each(?))")
      .bind(JSON.stringify(newest))
      .run();
    const again = [await store("The spare bulbs are in the hall cupboard."), await store("The ladder is in the shed.")];
    await cron(d, RECENT_JOBS_CRON, Date.now() + 180_000);
    expect(take(d, t)).toEqual([{ type: "new-items", tenantId: t.tenantId, itemIds: again }]);
  });

  it("per write, a write still sends its own embed job", async () => {
    const d = deployment({ JOB_DISPATCH: "per-write" });
    const t = await newTenant();
    const stored = await callTool(d, t, "memory_store", { content: "The tent poles are in the long green bag." });
    expect(take(d, t)).toEqual([{ type: "embed", tenantId: t.tenantId, itemIds: [stored.id] }]);
  });
});
