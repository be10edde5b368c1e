import { describe, expect, it } from "vitest";
import { RECENT_JOBS_CRON } from "../src/jobs/recent-jobs";
import { callTool, cron, deliver, deployment, take } from "./dispatch-helpers";
import { newTenant } from "./helpers";

// JOB_DISPATCH=per-minute with extraction on (the offline model): the new-items job queues an extraction where a
// conversation's turns not yet extracted fill a window; a conversation that goes quiet short of a window is flushed
// by the minute pass once it has been quiet for a minute.

const turn = (i: number) =>
  `Turn ${i}: I moved to Lisbon in March and I started a new job at the harbour office, where I work with boats.`;

describe("extraction dispatched per minute", () => {
  it("a window's worth of turns gets its extraction from the new-items job", async () => {
    const d = deployment({ EXTRACTION_WINDOW_TOKENS: "200" });
    const t = await newTenant();
    for (let i = 0; i < 12; i++)
      await callTool(d, t, "log_chat", {
        conversation_id: "move",
        role: i % 2 ? "assistant" : "user",
        content: turn(i),
      });
    expect(take(d, t)).toEqual([]);
    await cron(d, RECENT_JOBS_CRON, Date.now() + 30_000);
    const dispatched = take(d, t);
    expect(dispatched.map((m) => m.type)).toEqual(["new-items"]);
    await deliver(d, dispatched);
    expect(take(d, t)).toContainEqual({ type: "extract", tenantId: t.tenantId, conversationId: "move", flush: false });
  });

  it("a batch of extract jobs starts each only while a window's D1 queries are left, and defers the rest", async () => {
    const d = deployment({ EXTRACTION_WINDOW_TOKENS: "200", D1_QUERIES_PER_INVOCATION: "45" });
    const t = await newTenant();
    for (const c of ["a", "b", "c"])
      for (let i = 0; i < 12; i++)
        await callTool(d, t, "log_chat", { conversation_id: c, role: i % 2 ? "assistant" : "user", content: turn(i) });
    const jobs = ["a", "b", "c"].map((c) => ({
      type: "extract" as const,
      tenantId: t.tenantId,
      conversationId: c,
      flush: false,
    }));
    const result = await deliver(d, jobs);
    // Not failed: deferred, acknowledged and sent again, for an invocation of their own.
    expect(result.retryMessages).toEqual([]);
    expect(result.explicitAcks).toHaveLength(3);
    const windows = (c: string) =>
      t.db
        .prepare("SELECT COUNT(*) AS n FROM extraction_windows WHERE tenant_id = ? AND conversation_id = ?")
        .bind(t.tenantId, c)
        .first<number>("n");
    const sent = take(d, t).flatMap((m) => (m.type === "extract" ? [m.conversationId] : []));
    // Each job either read a window or was sent again untouched; three windows do not fit in 45 queries.
    const untouched: string[] = [];
    for (const c of ["a", "b", "c"]) if ((await windows(c)) === 0) untouched.push(c);
    expect(untouched.length).toBeGreaterThan(0);
    expect(sent).toEqual(expect.arrayContaining(untouched));
    expect(await windows("a")).toBeGreaterThan(0);
  });

  it("a conversation quiet short of a window is flushed by the minute pass after a minute, not before", async () => {
    const d = deployment();
    const t = await newTenant();
    const written = Date.now();
    await callTool(d, t, "log_chat", { conversation_id: "short", role: "user", content: turn(0) });
    await cron(d, RECENT_JOBS_CRON, written + 30_000);
    const dispatched = take(d, t);
    await deliver(d, dispatched);
    // Short of a window: the new-items job queues no extraction, and half a minute on none is due.
    expect(take(d, t).filter((m) => m.type === "extract")).toEqual([]);
    await cron(d, RECENT_JOBS_CRON, written + 40_000);
    expect(take(d, t)).toEqual([]);
    await cron(d, RECENT_JOBS_CRON, written + 70_000);
    expect(take(d, t)).toEqual([{ type: "extract", tenantId: t.tenantId, conversationId: "short", flush: true }]);
  });
});
