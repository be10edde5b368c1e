import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readMove } from "../src/control/move-records";
import { PURGE_AFTER_MS, runMove } from "../src/control/moves";
import { shardDatabase } from "../src/control/shards";
import {
  ADMIN_TOKEN,
  admin,
  BASE,
  call,
  callTool,
  newTenant,
  type RpcResponse,
  type TestTenant,
  waitForEmbeddings,
} from "./helpers";
import { lostQueue } from "./ownership-fixtures";
import { fetchWorker, setQuotas } from "./quota-helpers";

// Tenant quotas (src/core/tenants/quotas.ts) through the real routes: each is set low for one tenant with the
// operator's PATCH /admin/tenants/:id (the deployment's defaults are far above what a test writes).

/** What the shard holds of a tenant, counted (the truth the usage row must equal). */
async function stored(
  t: Pick<TestTenant, "tenantId" | "db">,
): Promise<{ items: number; bytes: number; pending_jobs: number; chunks: number; conversations: number }> {
  const items = (await t.db
    .prepare(
      "SELECT COUNT(*) AS items, COALESCE(SUM(length(CAST(content AS BLOB))), 0) AS bytes, COALESCE(SUM(embedded_at IS NULL), 0) AS pending_jobs FROM items WHERE tenant_id = ?",
    )
    .bind(t.tenantId)
    .first<{ items: number; bytes: number; pending_jobs: number }>())!;
  const chunks = (await t.db
    .prepare("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ?")
    .bind(t.tenantId)
    .first<number>("n"))!;
  const conversations = (await t.db
    .prepare("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ?")
    .bind(t.tenantId)
    .first<number>("n"))!;
  return { ...items, chunks, conversations };
}

/** The triggers' row for the tenant on a shard (null when there is none). */
async function usageRow(db: D1Database, tenantId: string) {
  return db
    .prepare("SELECT items, bytes, pending_jobs FROM tenant_usage WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ items: number; bytes: number; pending_jobs: number }>();
}

function quotaError(response: RpcResponse, quota: string) {
  expect(response.error, JSON.stringify(response)).toBeDefined();
  expect(response.error!.code).toBe(-32000);
  expect(response.error!.data.code).toBe("QUOTA_EXCEEDED");
  expect(response.error!.data.details.quota).toBe(quota);
  expect(response.error!.message).toContain(`(${quota})`);
  return response.error!.data.details;
}

const memories = (prefix: string, n: number) => ({
  memories: Array.from({ length: n }, (_, i) => ({ content: `${prefix} memory number ${i}` })),
});

describe("items and bytes stored", () => {
  it("max_items: under it works, past it the call is refused whole naming the quota, duplicates add nothing, deleting frees it", async () => {
    const t = await newTenant();
    expect((await setQuotas(t.tenantId, { max_items: 5 })).quotas).toMatchObject({ max_items: 5 });
    const first = await call(t.apiKey, "memory_batch_store", memories("alpha", 3));
    expect(first.stored).toBe(3);

    const before = await stored(t);
    const refused = await callTool(t.apiKey, "memory_batch_store", memories("beta", 3));
    expect(quotaError(refused, "max_items")).toEqual({
      quota: "max_items",
      limit: 5,
      usage: 3,
      adding: 3,
      retryable: false,
    });
    expect(refused.error!.message).toBe(
      "Tenant quota exceeded: items stored (max_items) is 5; the tenant stores 3 and this call adds 3. Nothing was written; delete items or ask the operator to raise the quota.",
    );
    expect(await stored(t)).toEqual(before);

    // Up to the quota exactly; then a log_chat (its conversation included) is refused whole too.
    expect((await call(t.apiKey, "memory_batch_store", memories("gamma", 2))).stored).toBe(2);
    const chat = await callTool(t.apiKey, "log_chat", {
      conversation_id: "c-1",
      role: "user",
      content: "one message too many",
    });
    expect(quotaError(chat, "max_items")).toMatchObject({ limit: 5, usage: 5, adding: 1 });
    expect(await stored(t)).toMatchObject({ items: 5, conversations: 0 });
    // Storing what is there already adds nothing, so it is not refused.
    expect((await call(t.apiKey, "memory_store", { content: "alpha memory number 0" })).duplicate_of).toBe(
      first.ids[0],
    );

    const pruned = await call(t.apiKey, "context_gc_prune", {
      project_id: "default",
      segment_ids: first.ids.slice(0, 2),
      action: "delete",
      confirm: true,
    });
    expect(pruned.pruned_segments).toHaveLength(2);
    expect(
      (await call(t.apiKey, "log_chat", { conversation_id: "c-1", role: "user", content: "room again" })).message_id,
    ).toBeTruthy();
    expect((await stored(t)).items).toBe(4);
    expect(await usageRow(t.db, t.tenantId)).toEqual({
      items: 4,
      bytes: (await stored(t)).bytes,
      pending_jobs: (await stored(t)).pending_jobs,
    });
  });

  it("max_bytes counts the UTF-8 bytes of content, refuses past it and frees on delete; an admin override back to the default lifts it", async () => {
    const t = await newTenant();
    await setQuotas(t.tenantId, { max_bytes: 100 });
    const a = await call(t.apiKey, "memory_store", { content: "é".repeat(30) }); // 60 bytes
    expect((await usageRow(t.db, t.tenantId))!.bytes).toBe(60);
    const refused = await callTool(t.apiKey, "memory_store", { content: "x".repeat(41) });
    expect(quotaError(refused, "max_bytes")).toEqual({
      quota: "max_bytes",
      limit: 100,
      usage: 60,
      adding: 41,
      retryable: false,
    });
    expect((await stored(t)).items).toBe(1);
    expect((await call(t.apiKey, "memory_store", { content: "🙂".repeat(10) })).id).toBeTruthy(); // 40 bytes: exactly 100
    await call(t.apiKey, "context_gc_prune", {
      project_id: "default",
      segment_ids: [a.id],
      action: "delete",
      confirm: true,
    });
    expect((await call(t.apiKey, "memory_store", { content: "x".repeat(41) })).id).toBeTruthy();
    const set = await setQuotas(t.tenantId, { max_bytes: null });
    expect(set.quota_overrides).toBeUndefined();
    expect(set.quotas.max_bytes).toBe(1_000_000_000);
    expect((await call(t.apiKey, "memory_store", { content: "y".repeat(500) })).id).toBeTruthy();
  });

  it("an import past the quota writes nothing (403, the quota named); one within it is counted", async () => {
    const t = await newTenant();
    await setQuotas(t.tenantId, { max_items: 4 });
    await call(t.apiKey, "memory_store", { content: "already here" });
    // Its embedding job would change pending_jobs between the two counts compared below.
    await waitForEmbeddings(t.tenantId);
    const entities = (n: number, word: string) =>
      `${Array.from({ length: n }, (_, i) =>
        JSON.stringify({
          type: "entity",
          name: `${word}${i}`,
          entityType: "bird",
          observations: [`${word} ${i} was seen`],
        }),
      ).join("\n")}\n`;
    const before = await stored(t);
    const refused = await importBody(t.tenantId, entities(4, "heron"));
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      error: { code: "QUOTA_EXCEEDED", details: { quota: "max_items", limit: 4, usage: 1, adding: 4 } },
    });
    expect(await stored(t)).toEqual(before);
    const ok = await importBody(t.tenantId, entities(3, "crane"));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).imported.items).toBe(3);
    expect(await usageRow(t.db, t.tenantId)).toMatchObject({ items: 4 });
    // The same file again adds nothing, so it is not refused at the quota.
    expect((await importBody(t.tenantId, entities(3, "crane"))).status).toBe(200);
  });
});

describe("the job backlog (max_pending_jobs)", () => {
  it("refuses writes while the tenant's items awaiting embedding are at the quota, retryable; reads still work", async () => {
    const t = await newTenant();
    await setQuotas(t.tenantId, { max_pending_jobs: 4 });
    // A call that alone is over the quota can never pass: not retryable, split it.
    const alone = await callTool(t.apiKey, "memory_batch_store", memories("too many", 5));
    expect(quotaError(alone, "max_pending_jobs")).toEqual({
      quota: "max_pending_jobs",
      limit: 4,
      usage: 0,
      adding: 5,
      retryable: false,
    });
    expect(alone.error!.message).toContain("split it into calls of at most 4 items");

    await call(t.apiKey, "memory_batch_store", memories("kestrel", 3));
    await waitForEmbeddings(t.tenantId);
    expect((await usageRow(t.db, t.tenantId))!.pending_jobs).toBe(0);
    // A backlog, as if the embed jobs were slow: the trigger counts items whose embedded_at is cleared.
    await t.db.prepare("UPDATE items SET embedded_at = NULL WHERE tenant_id = ?").bind(t.tenantId).run();
    expect((await usageRow(t.db, t.tenantId))!.pending_jobs).toBe(3);

    const before = await stored(t);
    const refused = await callTool(t.apiKey, "memory_batch_store", memories("osprey", 2));
    expect(quotaError(refused, "max_pending_jobs")).toEqual({
      quota: "max_pending_jobs",
      limit: 4,
      usage: 3,
      adding: 2,
      retryable: true,
      retry_after_seconds: 30,
    });
    expect(refused.error!.message).toContain("retry after 30 seconds");
    expect(await stored(t)).toEqual(before);
    // The admin API's import says the same with HTTP 429 and Retry-After.
    const imported = await importBody(
      t.tenantId,
      JSON.stringify({ type: "entity", name: "Owl", entityType: "bird", observations: ["hoots"] }) +
        "\n" +
        JSON.stringify({ type: "entity", name: "Tit", entityType: "bird", observations: ["sings"] }) +
        "\n",
    );
    expect(imported.status).toBe(429);
    expect(imported.headers.get("retry-after")).toBe("30");
    // Reads work meanwhile.
    expect(
      (await call(t.apiKey, "search", { query: "kestrel memory", mode: "keyword" })).results.length,
    ).toBeGreaterThan(0);
    // Once the backlog drains, writes pass again.
    await t.db.prepare("UPDATE items SET embedded_at = ? WHERE tenant_id = ?").bind(Date.now(), t.tenantId).run();
    expect((await call(t.apiKey, "memory_batch_store", memories("osprey", 2))).stored).toBe(2);
  });
});

describe("stats", () => {
  it("the admin stats and get_usage_report give each quota's limit and the tenant's usage; the triggers match a recount", async () => {
    const t = await newTenant();
    await setQuotas(t.tenantId, { max_items: 50 });
    await call(t.apiKey, "memory_batch_store", memories("wren", 3));
    await call(t.apiKey, "log_chat", { conversation_id: "c-2", role: "user", content: "naïve café message" });
    const doc = await call(t.apiKey, "store_memory", { file_name: "notes.md", content: "Notes about the wren." });
    await waitForEmbeddings(t.tenantId);
    // Re-embeds: pending again, its job held in a queue nobody reads, so the counts compared below cannot move.
    const held = lostQueue();
    const update = { name: "memory_update", arguments: { id: doc.resource_id, tags: ["birds"] } };
    const updated = await fetchWorker(
      new Request(`${BASE}/jsonrpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", method: "tools/call", params: update, id: 1 }),
      }),
      { JOBS: held.binding },
    );
    expect(((await updated.json()) as RpcResponse).error).toBeUndefined();
    expect(held.sent.map((job) => job.type)).toContain("embed");
    const truth = await stored(t);
    expect(truth.pending_jobs).toBe(1);
    expect(await usageRow(t.db, t.tenantId)).toEqual({
      items: truth.items,
      bytes: truth.bytes,
      pending_jobs: truth.pending_jobs,
    });

    const stats = await (await admin("GET", `/tenants/${t.tenantId}/stats`)).json<any>();
    expect(stats.quotas).toMatchObject({
      max_items: { limit: 50, usage: 5 },
      max_bytes: { limit: 1_000_000_000, usage: truth.bytes },
      max_pending_jobs: { limit: 100_000, usage: truth.pending_jobs },
      calls_per_minute: { limit: 100_000 },
    });
    const report = await call(t.apiKey, "get_usage_report", {});
    expect(report.quotas).toMatchObject({ max_items: { limit: 50, usage: 5 }, max_bytes: { usage: truth.bytes } });
    expect(report.quotas.calls_per_minute.limit).toBe(100_000);
  });
});

describe("a move between shards", () => {
  it("keeps the usage right on the target (set at the switch) and leaves none on the source", async () => {
    const t = await newTenant();
    await setQuotas(t.tenantId, { max_items: 6 });
    await call(t.apiKey, "memory_batch_store", memories("plover", 4));
    await call(t.apiKey, "log_chat", { conversation_id: "c-3", role: "user", content: "über message" });
    // Embedding jobs running during the move would change pending_jobs between the counts compared.
    await waitForEmbeddings(t.tenantId);
    const target = t.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0";
    const targetDb = shardDatabase(env, target);
    // A stale row on the target (from an earlier failed move, or the copy's own counting) must not survive the switch.
    await targetDb
      .prepare("INSERT OR REPLACE INTO tenant_usage (tenant_id, items, bytes, pending_jobs) VALUES (?, 999, 999, 999)")
      .bind(t.tenantId)
      .run();
    const before = await stored(t);

    const started = await moveWith(t.tenantId, target);
    expect(started.status).toBe(202);
    for (let i = 0; i < 200; i++) {
      const move = (await readMove(env.CONTROL, t.tenantId))!;
      const clock = move.state === "purging" ? () => move.switched_at! + PURGE_AFTER_MS + 1 : () => Date.now();
      if ((await runMove(env, t.tenantId, 20, clock)).state === "done") break;
    }
    expect((await readMove(env.CONTROL, t.tenantId))!.state).toBe("done");
    const moved = { ...t, shard: target, db: targetDb };
    expect(await stored(moved)).toEqual(before);
    expect(await usageRow(targetDb, t.tenantId)).toEqual({
      items: before.items,
      bytes: before.bytes,
      pending_jobs: before.pending_jobs,
    });
    expect(await usageRow(t.db, t.tenantId)).toBeNull();

    // The quota holds on the target, from the count carried over.
    const refused = await callTool(t.apiKey, "memory_batch_store", memories("after", 2));
    expect(quotaError(refused, "max_items")).toMatchObject({ limit: 6, usage: 5, adding: 2 });
    await call(t.apiKey, "memory_store", { content: "one more fits" });
    expect((await usageRow(targetDb, t.tenantId))!.items).toBe(6);
  });
});

/** POST an import body as the operator. */
async function importBody(tenantId: string, body: string): Promise<Response> {
  return fetchWorker(
    new Request(`${BASE}/admin/tenants/${tenantId}/import`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body,
    }),
  );
}

/** Starts a move whose queue message nobody runs: the test runs it (moves.test.ts does the same). */
async function moveWith(tenantId: string, shard: string): Promise<Response> {
  const request = new Request(`${BASE}/admin/tenants/${tenantId}/move`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ shard }),
  });
  return fetchWorker(request, { JOBS: lostQueue().binding });
}
