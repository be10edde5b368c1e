import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { UnitMeter } from "../src/billable-units";
import { readConfig } from "../src/config";
import { autoSummarize } from "../src/core/conversations/auto-summarize";
import { needsSummary } from "../src/core/conversations/conversations";
import { meteredScope, tenantScope } from "../src/db/scope";
import type { Env } from "../src/env";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import { buildServices } from "../src/services";
import { call, callTool, jsonrpc, newKey, newTenant, tenantDb, workerTokenCounter } from "./helpers";

/**
 * A JSON-RPC batch of a tenant's calls, each request with a fresh key (the tests' limit is 40 calls a minute per
 * key); run with D1_QUERIES_PER_INVOCATION=50 (the Free plan), the calls a request's budget did not cover are
 * refused retryably, and are sent again until every one is answered.
 */
async function batchAll(tenantId: string, batch: { id: string }[]): Promise<void> {
  for (let pending = batch; pending.length > 0; ) {
    const response = await jsonrpc((await newKey(tenantId)).apiKey, pending);
    expect(response.status).toBe(200);
    const refused = new Set(
      (await response.json<{ id: string; error?: { data?: { details?: { reason?: string } } } }[]>())
        .filter((a) => a.error?.data?.details?.reason === "d1_queries_per_invocation")
        .map((a) => a.id),
    );
    expect(refused.size).toBeLessThan(pending.length);
    pending = pending.filter((c) => refused.has(c.id));
  }
}

const versions = async (tenantId: string, contextId: string) =>
  (
    await (
      await tenantDb(tenantId)
    )
      .prepare("SELECT version FROM summaries WHERE tenant_id = ? AND conversation_id = ? ORDER BY version")
      .bind(tenantId, contextId)
      .all<{ version: number }>()
  ).results.map((r) => r.version);

describe("contexts (seed 003)", () => {
  it("add_message creates the context; retrieve_context returns messages and the latest summary", async () => {
    const t = await newTenant();
    expect(
      await call(t.apiKey, "add_message", {
        contextId: "ctx-a",
        message: "We decided to use Postgres.",
        role: "user",
        importance: "HIGH",
        tags: ["db"],
      }),
    ).toMatchObject({ success: true });
    await call(t.apiKey, "add_message", { contextId: "ctx-a", message: "Noted.", role: "assistant" });
    const context = await call(t.apiKey, "retrieve_context", { contextId: "ctx-a" });
    expect(context).toEqual({
      success: true,
      contextId: "ctx-a",
      messages: [
        {
          role: "user",
          content: "We decided to use Postgres.",
          importance: "HIGH",
          tags: ["db"],
          timestamp: expect.any(Number),
        },
        { role: "assistant", content: "Noted.", importance: "MEDIUM", tags: [], timestamp: expect.any(Number) },
      ],
      hasSummary: false,
      summary: null,
    });
    const missing = await callTool(t.apiKey, "retrieve_context", { contextId: "nope" });
    expect(missing.error).toMatchObject({
      code: -32000,
      data: { code: "NOT_FOUND", details: { parameter: "contextId" } },
    });
  });

  it("summarize_context writes a new version with code blocks, insights and an importance score", async () => {
    const t = await newTenant();
    const messages = [
      ["user", "The checkout page times out under load. We must fix the retry logic before Friday.", "CRITICAL"],
      [
        "assistant",
        "Here is a fix:\n```ts\nawait retry(() => pay(order), { attempts: 3 })\n```\nIt retries payment three times.",
        "HIGH",
      ],
      ["user", "Great, and remember the deadline is Friday because of the launch.", "MEDIUM"],
    ] as const;
    for (const [role, message, importance] of messages)
      await call(t.apiKey, "add_message", { contextId: "bug-42", message, role, importance });
    const first = await call(t.apiKey, "summarize_context", { contextId: "bug-42" });
    expect(first).toMatchObject({
      contextId: "bug-42",
      version: 1,
      messageCount: 3,
      tokenLimit: 512,
      codeBlocks: ["```ts\nawait retry(() => pay(order), { attempts: 3 })\n```"],
    });
    expect(first.summary).toContain("retry");
    expect(first.keyInsights.length).toBeGreaterThan(0);
    expect(first.importanceScore).toBeGreaterThan(0.6);
    expect(first.tokensUsed).toBe((await workerTokenCounter("o200k_base")).count(first.summary));
    expect(typeof first.createdAt).toBe("number");
    const second = await call(t.apiKey, "summarize_context", { contextId: "bug-42" });
    expect(second.version).toBe(2);
    const context = await call(t.apiKey, "retrieve_context", { contextId: "bug-42" });
    expect(context).toMatchObject({ hasSummary: true, summary: { version: 2, contextId: "bug-42" } });
  });

  it("auto-summarizes every 5 new messages through the queue", async () => {
    const t = await newTenant();
    for (let i = 1; i <= 4; i++)
      await call(t.apiKey, "add_message", {
        contextId: "auto",
        message: `Step ${i} of the plan is to migrate table ${i}.`,
        role: "user",
      });
    await new Promise((r) => setTimeout(r, 2500));
    expect(await versions(t.tenantId, "auto")).toEqual([]);
    await call(t.apiKey, "add_message", { contextId: "auto", message: "Step 5 is the cutover.", role: "user" });
    await expect.poll(() => versions(t.tenantId, "auto"), { timeout: 15_000 }).toEqual([1]);
    for (let i = 6; i <= 10; i++)
      await call(t.apiKey, "add_message", { contextId: "auto", message: `Step ${i}.`, role: "assistant" });
    await expect.poll(() => versions(t.tenantId, "auto"), { timeout: 15_000 }).toEqual([1, 2]);
    expect((await call(t.apiKey, "retrieve_context", { contextId: "auto" })).summary.messageCount).toBe(10);
  }, 40_000);

  it("a re-delivered summarize job changes nothing", async () => {
    const t = await newTenant();
    for (let i = 0; i < 3; i++)
      await call(t.apiKey, "add_message", { contextId: "dup", message: `message ${i}`, role: "user" });
    const body: JobMessage = { type: "summarize", tenantId: t.tenantId, conversationId: "dup", messageCount: 3 };
    for (const id of ["s-1", "s-1-again"]) {
      const batch = createMessageBatch<JobMessage>("context-edge-jobs", [
        { id, timestamp: new Date(), attempts: 1, body },
      ]);
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      await waitOnExecutionContext(ctx);
      expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual([id]);
    }
    expect(await versions(t.tenantId, "dup")).toEqual([1]);
  });

  it("a batch's summarize jobs of one tenant run as one: each conversation due gets one version, in three round trips", async () => {
    const t = await newTenant();
    // Three messages each, under the auto-summarize threshold (5), so only the jobs below summarize.
    const ids = ["m0", "m1", "m2", "m3", "m4", "m5"];
    const batch = ids.flatMap((contextId) =>
      [1, 2, 3].map((n) => ({
        jsonrpc: "2.0",
        id: `${contextId}-${n}`,
        method: "tools/call",
        params: { name: "add_message", arguments: { contextId, message: `${contextId} says ${n}`, role: "user" } },
      })),
    );
    await batchAll(t.tenantId, batch);
    await call(t.apiKey, "summarize_context", { contextId: "m0" }); // m0 is covered already
    const job = (conversationId: string, messageCount = 3) => ({ conversationId, messageCount });
    const meter = new UnitMeter();
    const trips = meter.current;
    const scope = meteredScope(tenantScope(t.db, t.tenantId), meter);
    const services = buildServices(env as unknown as Env, t.db, { tenantIndex: null }, () => {});
    // m1 twice (a re-delivery in the same batch), m0 covered, "gone" never existed.
    const { summarized, left } = await autoSummarize(scope, services, [
      job("m0"),
      job("m1"),
      job("m1"),
      job("m2"),
      job("m3"),
      job("m4"),
      job("m5"),
      job("gone"),
    ]);
    expect(summarized).toBe(5);
    expect(left).toEqual([]);
    expect(trips.d1RoundTrips).toBe(3);
    for (const id of ids) expect(await versions(t.tenantId, id), id).toEqual([1]);
    const summary = await call(t.apiKey, "retrieve_context", { contextId: "m3" });
    expect(summary.summary).toMatchObject({ messageCount: 3, version: 1 });
    expect(summary.summary.summary).toContain("m3 says");
    // Through the queue, merged: every message is acked, and covered conversations change nothing.
    const messages = ["m1", "m4", "m5"].map((id, i) => ({
      id: `q-${i}`,
      timestamp: new Date(),
      attempts: 1,
      body: { type: "summarize", tenantId: t.tenantId, ...job(id) } as JobMessage,
    }));
    const queued = createMessageBatch<JobMessage>("context-edge-jobs", messages);
    const ctx = createExecutionContext();
    await worker.queue(queued, env, ctx);
    await waitOnExecutionContext(ctx);
    expect((await getQueueResult(queued, ctx)).explicitAcks).toEqual(["q-0", "q-1", "q-2"]);
    for (const id of ids) expect(await versions(t.tenantId, id), id).toEqual([1]);
  });

  it("a merged summarize job of more than 50 conversations runs in groups of 50", async () => {
    const t = await newTenant();
    const ids = Array.from({ length: 51 }, (_, i) => `g${i}`);
    for (const part of [ids.slice(0, 50), ids.slice(50)]) {
      const batch = part.map((contextId) => ({
        jsonrpc: "2.0",
        id: contextId,
        method: "tools/call",
        params: { name: "add_message", arguments: { contextId, message: `${contextId} opens`, role: "user" } },
      }));
      await batchAll(t.tenantId, batch);
    }
    const meter = new UnitMeter();
    const trips = meter.current;
    const services = buildServices(env as unknown as Env, t.db, { tenantIndex: null }, () => {});
    const { summarized } = await autoSummarize(
      meteredScope(tenantScope(t.db, t.tenantId), meter),
      services,
      ids.map((conversationId) => ({ conversationId, messageCount: 1 })),
    );
    expect(summarized).toBe(51);
    expect(trips.d1RoundTrips).toBe(5); // the conversations, then messages and writes for 50 and for 1
    expect(await versions(t.tenantId, "g50")).toEqual([1]);
  });

  it("applies the message and token thresholds, and autoSummarize", () => {
    const config = readConfig(env).conversations;
    const base = { messageCount: 4, tokens: 100, summarizedCount: 0, summarizedTokens: 0 };
    expect(needsSummary(base, config)).toBe(false);
    expect(needsSummary({ ...base, messageCount: 5 }, config)).toBe(true);
    expect(needsSummary({ ...base, tokens: Math.ceil(0.8 * 8192) }, config)).toBe(true);
    expect(needsSummary({ ...base, messageCount: 12, summarizedCount: 8 }, config)).toBe(false);
    expect(needsSummary({ ...base, messageCount: 50 }, { ...config, autoSummarize: false })).toBe(false);
  });
});

/** Mermaid flowchart subset we emit: header, quoted node labels, labelled edges; ids are n<digits>. */
function assertMermaid(diagram: string) {
  const [header, ...lines] = diagram.split("\n");
  expect(header).toBe("graph TD;");
  const declared = new Set<string>();
  for (const line of lines) {
    // label characters: anything but quotes, brackets, pipes, backticks, ';' and '#', except entity codes like #34;
    const node = line.match(/^ {2}(n\d+)\["((?:[^"[\]<>{}|`;#\n]|#\d+;)*)"\];$/);
    const edge = line.match(/^ {2}(n\d+) -->\|((?:[^"|[\]<>{}`;#\n]|#\d+;)*)\| (n\d+);$/);
    expect(node || edge, `not valid mermaid: ${line}`).toBeTruthy();
    if (node) declared.add(node[1]!);
    if (edge) {
      expect(declared.has(edge[1]!)).toBe(true);
      expect(declared.has(edge[3]!)).toBe(true);
    }
  }
}

describe("visualize_context", () => {
  it("lists sessions, and renders json, text and mermaid with hostile ids escaped", async () => {
    const t = await newTenant();
    const ids = ['main "ctx"', "other-->evil;", "third[1]|x"];
    for (const id of ids)
      await call(t.apiKey, "add_message", { contextId: id, message: `hello from ${id}`, role: "user" });
    await call(t.apiKey, "add_relationship", {
      sourceContextId: ids[0],
      targetContextId: ids[1],
      relationshipType: "continues",
    });
    await call(t.apiKey, "add_relationship", {
      sourceContextId: ids[1],
      targetContextId: ids[2],
      relationshipType: "references",
      weight: 0.5,
    });

    const sessions = await call(t.apiKey, "visualize_context", {});
    expect(sessions).toEqual({ success: true, sessions: expect.arrayContaining(ids), format: "json" });
    const json = await call(t.apiKey, "visualize_context", { contextId: ids[0] });
    expect(json).toEqual({
      success: true,
      contextId: ids[0],
      messageCount: 1,
      hasSummary: false,
      summary: null,
      relatedContexts: [ids[1]],
    });
    const deep = await call(t.apiKey, "visualize_context", { contextId: ids[0], depth: 2 });
    expect(deep.relatedContexts).toEqual([ids[1], ids[2]]);
    const text = await call(t.apiKey, "visualize_context", { contextId: ids[0], format: "text" });
    expect(text).toMatchObject({ success: true, contextId: ids[0], format: "text" });
    expect(text.text).toContain(`Context ID: ${ids[0]}\nMessages: 1\nHas Summary: false`);
    const mermaid = await call(t.apiKey, "visualize_context", { contextId: ids[0], format: "mermaid", depth: 3 });
    expect(mermaid).toMatchObject({ success: true, format: "mermaid" });
    assertMermaid(mermaid.diagram);
    expect(mermaid.diagram).toContain('n0["main #34;ctx#34;"];');
    expect(mermaid.diagram).toContain("n0 -->|continues| n1;");
    expect(mermaid.diagram).toContain("n1 -->|references| n2;");
    expect(
      (await callTool(t.apiKey, "visualize_context", { contextId: ids[0], depth: 4 })).error!.data.details.parameter,
    ).toBe("depth");
  });
});

describe("relationships between contexts", () => {
  it("adds typed, weighted links and reads them by direction and type", async () => {
    const t = await newTenant();
    for (const id of ["a", "b", "c"]) await call(t.apiKey, "add_message", { contextId: id, message: id, role: "user" });
    expect(
      await call(t.apiKey, "add_relationship", {
        sourceContextId: "a",
        targetContextId: "b",
        relationshipType: "parent",
      }),
    ).toEqual({
      success: true,
      sourceContextId: "a",
      targetContextId: "b",
      relationshipType: "parent",
    });
    await call(t.apiKey, "add_relationship", {
      sourceContextId: "c",
      targetContextId: "a",
      relationshipType: "references",
      weight: 0.3,
    });
    expect(await call(t.apiKey, "get_related_contexts", { contextId: "a" })).toEqual(["b", "c"]);
    expect(await call(t.apiKey, "get_related_contexts", { contextId: "a", direction: "outgoing" })).toEqual(["b"]);
    expect(await call(t.apiKey, "get_related_contexts", { contextId: "a", direction: "incoming" })).toEqual(["c"]);
    expect(await call(t.apiKey, "get_related_contexts", { contextId: "a", relationshipType: "references" })).toEqual([
      "c",
    ]);
  });

  it("rejects self-links, unknown types, bad weights and missing or foreign contexts, writing nothing", async () => {
    const t = await newTenant();
    const other = await newTenant();
    await call(t.apiKey, "add_message", { contextId: "x", message: "x", role: "user" });
    await call(other.apiKey, "add_message", { contextId: "theirs", message: "y", role: "user" });
    const add = (args: object) =>
      callTool(t.apiKey, "add_relationship", {
        sourceContextId: "x",
        targetContextId: "theirs",
        relationshipType: "similar",
        ...args,
      });
    expect((await add({ targetContextId: "x" })).error!.data.details.parameter).toBe("targetContextId");
    expect((await add({ relationshipType: "friend" })).error!.message).toContain("must be one of");
    expect((await add({ weight: 1.5 })).error!.message).toBe(
      "Invalid parameter 'weight': value must be at most 1 (got 1.5)",
    );
    expect((await add({})).error).toMatchObject({
      data: { code: "NOT_FOUND", details: { parameter: "targetContextId" } },
    });
    const count = await t.db.prepare("SELECT COUNT(*) AS n FROM links WHERE tenant_id = ?").bind(t.tenantId).first("n");
    expect(count).toBe(0);
  });
});
