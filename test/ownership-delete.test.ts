import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DELETION_LIMITS } from "../src/core/ownership/deletion-steps";
import worker from "../src/index";
import {
  admin,
  call,
  callTool,
  jsonrpc,
  newKey,
  newTenant,
  untilProjectsDeleted,
  usageLogSettled,
  waitForEmbeddings,
} from "./helpers";
import { authorizeWithKey, exchangeCode, mcpTool } from "./oauth-flow";
import { adminWith, chunkIdsOf, deliverJobs, kvKeysOf, lostQueue, populate, rowsOfTenant } from "./ownership-fixtures";

const nonZero = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
const tenantRow = (tenantId: string) =>
  env.CONTROL.prepare("SELECT deleting_at FROM tenants WHERE id = ?")
    .bind(tenantId)
    .first<{ deleting_at: number | null }>();

describe("DELETE /admin/tenants/:tenant", () => {
  it("removes every row, vector, cache value and OAuth grant of the tenant and nothing of another", async () => {
    const doomed = await newTenant();
    const other = await newTenant();
    // A keyed call of each, first (populate then waits for its jobs; five turns are summarized).
    for (const t of [doomed, other])
      await call(t.apiKey, "memory_ingest", {
        conversation_id: "keyed",
        messages: [1, 2, 3, 4, 5].map((n) => ({ role: "user", content: `keyed turn ${n}` })),
        idempotency_key: "k",
      });
    await populate(doomed, "default", "walrus");
    await populate(other, "default", "walrus");
    const second = await newKey(doomed.tenantId, { scopes: ["read", "write", "admin"] });
    const { client, code, verifier } = await authorizeWithKey(doomed.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    expect((await mcpTool(tokens.access_token, "ping")).status).toBe(200);
    await env.CONTROL.prepare(
      "INSERT INTO job_failures (tenant_id, message_id, job_type, body, attempts, failed_at) VALUES (?, ?, 'embed', '{}', 6, 0)",
    )
      .bind(doomed.tenantId, `failure-${doomed.tenantId}`)
      .run();

    const chunkIds = await chunkIdsOf(doomed.tenantId);
    await usageLogSettled(doomed.tenantId); // every call so far is in the usage log (the USAGE queue writes it)
    const before = await rowsOfTenant(doomed, chunkIds);
    for (const table of [
      "items",
      "chunks",
      "chunks_fts",
      "local_vectors",
      "summaries",
      "conversations",
      "links",
      "project_tasks",
      "cache_entries",
      "cache_generations",
      "keyword_stats",
      "tool_calls",
      "usage_hours",
      "tool_conversation_days",
      "idempotency_keys",
      "job_failures",
      "api_keys",
      "tenants",
    ]) {
      expect(before[table], table).toBeGreaterThan(0);
    }
    expect(await kvKeysOf(doomed.tenantId)).not.toHaveLength(0);
    // Grants, and the tokens stored under them, name the key they were issued through.
    const grantKeys = async () =>
      (await env.OAUTH_KV.list()).keys.filter((k) => k.name.includes(`:${doomed.keyId}:`)).length;
    expect(await grantKeys()).toBeGreaterThanOrEqual(1);
    await usageLogSettled(other.tenantId);
    const otherBefore = await rowsOfTenant(other, await chunkIdsOf(other.tenantId));

    const response = await admin("DELETE", `/tenants/${doomed.tenantId}`);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ tenant_id: doomed.tenantId, status: "deleting" });
    // Its keys and tokens are refused at once, whatever is left to delete.
    expect((await jsonrpc(doomed.apiKey, { jsonrpc: "2.0", method: "tools/list", id: 1 })).status).toBe(401);
    expect((await jsonrpc(second.apiKey, { jsonrpc: "2.0", method: "tools/list", id: 1 })).status).toBe(401);
    expect((await mcpTool(tokens.access_token, "ping")).status).toBe(401);
    expect((await admin("GET", `/tenants/${doomed.tenantId}/keys`, undefined, second.apiKey)).status).toBe(401);
    expect((await admin("POST", `/tenants/${doomed.tenantId}/keys`, { name: "late" })).status).toBe(409);

    // The real queue consumer finishes the job.
    await expect.poll(() => tenantRow(doomed.tenantId), { timeout: 20_000, interval: 100 }).toBeNull();
    expect(nonZero(await rowsOfTenant(doomed, chunkIds))).toEqual({});
    expect(await kvKeysOf(doomed.tenantId)).toEqual([]);
    expect(await grantKeys()).toBe(0);

    // Idempotent: once gone, 404 (documented); another tenant's rows are exactly as they were, and it still finds its data.
    const again = await admin("DELETE", `/tenants/${doomed.tenantId}`);
    expect(again.status).toBe(404);
    expect(((await again.json()) as any).error.code).toBe("NOT_FOUND");
    expect(await rowsOfTenant(other, await chunkIdsOf(other.tenantId))).toEqual(otherBefore);
    const found = await call(other.apiKey, "search", { query: "walrus harbour" });
    expect(found.results.length).toBeGreaterThan(0);
    expect(
      ((await (await admin("GET", "/tenants")).json()) as any).tenants.some(
        (t: any) => t.tenant_id === doomed.tenantId,
      ),
    ).toBe(false);
  }, 60_000);

  it("works in bounded steps and resumes after an interruption (request, repeated request, then the queue job)", async () => {
    const t = await newTenant();
    const total = DELETION_LIMITS.items + 150;
    for (let start = 0; start < total; start += 100) {
      await call(t.apiKey, "memory_batch_store", {
        memories: Array.from({ length: Math.min(100, total - start) }, (_, i) => ({
          content: `bulk record ${start + i} of the archive`,
        })),
      });
    }
    await waitForEmbeddings(t.tenantId, 60_000);
    const chunkIds = await chunkIdsOf(t.tenantId);
    const items = async () =>
      (await t.db
        .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first<{ n: number }>())!.n;

    // First request: one bounded step; its queue message is lost.
    const lost = lostQueue();
    const first = await adminWith({ JOBS: lost.binding }, "DELETE", `/tenants/${t.tenantId}`);
    expect(first.status).toBe(202);
    expect(await items()).toBe(total - DELETION_LIMITS.items);
    expect(lost.sent).toEqual([{ type: "delete", tenantId: t.tenantId, project: null }]);
    expect((await callTool(t.apiKey, "ping")).error).toBeDefined();
    const listed = ((await (await admin("GET", "/tenants")).json()) as any).tenants;
    expect(listed.find((row: any) => row.tenant_id === t.tenantId).deleting_since).toMatch(/^\d{4}-/);

    // The cron sweep re-queues a deletion that stalled.
    await env.CONTROL.prepare("UPDATE tenants SET deleting_at = ? WHERE id = ?")
      .bind(Date.now() - 3_600_000, t.tenantId)
      .run();
    const swept = lostQueue();
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "*/15 * * * *" }), { ...env, JOBS: swept.binding }, ctx);
    await waitOnExecutionContext(ctx);
    expect(swept.sent).toContainEqual({ type: "delete", tenantId: t.tenantId, project: null });

    // Repeating the request resumes (another step) and is still 202.
    const second = await adminWith({ JOBS: lost.binding }, "DELETE", `/tenants/${t.tenantId}`);
    expect(second.status).toBe(202);
    expect(await items()).toBe(0);

    // The queued job runs the rest (re-queueing itself while work is left) to the end.
    let pending = [lost.sent.at(-1)!];
    for (let round = 0; pending.length > 0 && round < 10; round++) {
      const next = lostQueue();
      await deliverJobs(pending, { JOBS: next.binding });
      pending = next.sent.filter((m) => m.type === "delete");
    }
    expect(await tenantRow(t.tenantId)).toBeNull();
    expect(nonZero(await rowsOfTenant(t, chunkIds))).toEqual({});
    expect((await admin("DELETE", `/tenants/${t.tenantId}`)).status).toBe(404);
  }, 120_000);

  it("is for the operator only", async () => {
    const t = await newTenant({ scopes: ["read", "write", "admin"] });
    const response = await admin("DELETE", `/tenants/${t.tenantId}`, undefined, t.apiKey);
    expect(response.status).toBe(403);
    expect(await tenantRow(t.tenantId)).toEqual({ deleting_at: null });
    expect((await admin("DELETE", "/tenants/tn_never_existed")).status).toBe(404);
  });
});

describe("DELETE /admin/tenants/:tenant/projects/:project", () => {
  it("removes the project from every store, leaves the tenant's other projects alone, and is idempotent", async () => {
    const t = await newTenant();
    // Keyed calls, first (populate then waits for their jobs; five turns are summarized): their keys' responses name
    // their project.
    const keyed = (project: string) => ({
      conversation_id: `${project}-keyed`,
      project_id: project,
      messages: [1, 2, 3, 4, 5].map((n) => ({ role: "user", content: `keyed turn ${n}` })),
      idempotency_key: `${project}-1`,
    });
    const keyedDoomed = await call(t.apiKey, "memory_ingest", keyed("doomed"));
    const keyedKept = await call(t.apiKey, "memory_ingest", keyed("kept"));
    const keysOf = async () =>
      (
        await t.db
          .prepare("SELECT key FROM idempotency_keys WHERE tenant_id = ? ORDER BY key")
          .bind(t.tenantId)
          .all<{ key: string }>()
      ).results.map((r) => r.key);
    expect(await keysOf()).toEqual(["doomed-1", "kept-1"]);
    await populate(t, "doomed", "otter");
    await populate(t, "kept", "heron");
    const projectRows = async (project: string) => {
      const tables = [
        "items",
        "conversations",
        "cache_entries",
        "cache_generations",
        "cache_link_marks",
        "tool_calls",
        "tool_conversation_days",
        "project_tasks",
        "local_vectors",
      ];
      const counts: Record<string, number> = {};
      for (const table of tables)
        counts[table] = (await t.db
          .prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant_id = ? AND project = ?`)
          .bind(t.tenantId, project)
          .first<{ n: number }>())!.n;
      return counts;
    };
    const doomedItems = (
      await t.db
        .prepare("SELECT id FROM items WHERE tenant_id = ? AND project = 'doomed'")
        .bind(t.tenantId)
        .all<{ id: string }>()
    ).results.map((r) => r.id);
    const doomedChunks = (
      await t.db
        .prepare("SELECT id FROM chunks WHERE item_id IN (SELECT value FROM json_each(?))")
        .bind(JSON.stringify(doomedItems))
        .all<{ id: number }>()
    ).results.map((r) => r.id);
    expect(nonZero(await projectRows("doomed"))).toMatchObject({
      items: 14,
      conversations: 2,
      local_vectors: 14,
      cache_link_marks: 4,
    });
    const keptBefore = await projectRows("kept");

    // A project-limited admin key may delete its own project only.
    const narrow = await newKey(t.tenantId, { scopes: ["read", "write", "admin"], projects: ["doomed"] });
    expect((await admin("DELETE", `/tenants/${t.tenantId}/projects/kept`, undefined, narrow.apiKey)).status).toBe(403);
    const stranger = await newTenant({ scopes: ["read", "write", "admin"] });
    expect((await admin("DELETE", `/tenants/${t.tenantId}/projects/doomed`, undefined, stranger.apiKey)).status).toBe(
      403,
    );
    const tooLong = await admin("DELETE", `/tenants/${t.tenantId}/projects/${"p".repeat(201)}`);
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({
      error: { code: "INVALID_PARAMETER", details: { parameter: "project" } },
    });

    const response = await admin("DELETE", `/tenants/${t.tenantId}/projects/doomed`, undefined, narrow.apiKey);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ tenant_id: t.tenantId, project: "doomed", status: "deleting" });
    await untilProjectsDeleted(t);

    expect(nonZero(await projectRows("doomed"))).toEqual({});
    expect(await keysOf()).toEqual(["kept-1"]);
    // Deleting it again finds nothing left: 200 at once (a project has no row of its own to be missing).
    const again = await admin("DELETE", `/tenants/${t.tenantId}/projects/doomed`);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ tenant_id: t.tenantId, project: "doomed", status: "deleted" });
    expect(
      await t.db
        .prepare("SELECT COUNT(*) AS n FROM summaries WHERE tenant_id = ? AND conversation_id = 'otter-chat'")
        .bind(t.tenantId)
        .first("n"),
    ).toBe(0);
    const doomedIds = JSON.stringify([...doomedItems, ...doomedChunks.map(String), "otter-chat"]);
    const links =
      "SELECT COUNT(*) AS n FROM links WHERE tenant_id = ?1 AND (source_id IN (SELECT value FROM json_each(?2)) OR target_id IN (SELECT value FROM json_each(?2)))";
    expect(await t.db.prepare(links).bind(t.tenantId, doomedIds).first("n")).toBe(0);
    expect(
      await t.db
        .prepare("SELECT COUNT(*) AS n FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?))")
        .bind(JSON.stringify(doomedChunks))
        .first("n"),
    ).toBe(0);
    expect((await call(t.apiKey, "search", { query: "otter", mode: "keyword" })).results).toEqual([]);
    expect((await call(t.apiKey, "search", { query: "otter harbour", project: "doomed" })).results).toEqual([]);

    // The other project is as it was and still found; the key and the tenant still work.
    const keptAfter = await projectRows("kept");
    // The usage log may still be writing the kept project's calls.
    const usage = { tool_calls: keptAfter.tool_calls, tool_conversation_days: keptAfter.tool_conversation_days };
    expect(keptAfter).toEqual({ ...keptBefore, ...usage });
    expect(keptAfter.tool_calls).toBeGreaterThanOrEqual(keptBefore.tool_calls!);
    expect(keptAfter.tool_conversation_days).toBeGreaterThanOrEqual(keptBefore.tool_conversation_days!);
    expect(
      (await call(t.apiKey, "search", { query: "heron harbour", project: "kept" })).results.length,
    ).toBeGreaterThan(0);

    // A retry after the deletion stores anew instead of answering an id that is gone; the kept project's still answers.
    expect((await call(t.apiKey, "memory_ingest", keyed("doomed"))).ids).not.toEqual(keyedDoomed.ids);
    expect(await call(t.apiKey, "memory_ingest", keyed("kept"))).toEqual(keyedKept);
    expect((await admin("DELETE", `/tenants/tn_never_existed/projects/doomed`)).status).toBe(404);
  }, 60_000);
});
