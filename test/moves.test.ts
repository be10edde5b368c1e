import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readMove } from "../src/control/move-records";
import { PURGE_AFTER_MS, runMove } from "../src/control/moves";
import { shardDatabase } from "../src/control/shards";
import { NOT_MOVED, TENANT_TABLES_TO_MOVE } from "../src/control/tenant-tables";
import worker from "../src/index";
import { STALLED_MOVE_AFTER_MS, sweepLostJobs } from "../src/jobs/sweep";
import type { JobMessage } from "../src/messages";
import {
  ADMIN_TOKEN,
  admin,
  BASE,
  call,
  callTool,
  mcpPost,
  newKey,
  newTenant,
  type TestTenant,
  usageLogSettled,
} from "./helpers";
import { adminWith, chunkIdsOf, deliverJobs, lostQueue, populate } from "./ownership-fixtures";

const otherShard = (shard: string) => (shard === "SHARD_0" ? "SHARD_1" : "SHARD_0");

/** POST /admin/tenants/:id/move with bindings replaced (a JOBS that keeps its messages: no runner but the test). */
async function postMove(
  tenantId: string,
  body: unknown,
  overrides: Partial<typeof env> = {},
  token = ADMIN_TOKEN,
): Promise<Response> {
  const ctx = createExecutionContext();
  const request = new Request(`${BASE}/admin/tenants/${tenantId}/move`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const response = (await worker.fetch!(request as any, { ...env, ...overrides }, ctx)) as unknown as Response;
  await waitOnExecutionContext(ctx);
  return response;
}

/** Rows of a tenant per table in one database. */
async function tableCounts(db: D1Database, tenantId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const t of TENANT_TABLES_TO_MOVE)
    counts[t.name] = (await db
      .prepare(`SELECT COUNT(*) AS n FROM ${t.name} WHERE tenant_id = ?`)
      .bind(tenantId)
      .first<number>("n"))!;
  counts.chunks_fts = (await db
    .prepare("SELECT COUNT(*) AS n FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE tenant_id = ?)")
    .bind(tenantId)
    .first<number>("n"))!;
  return counts;
}

/** Runs the move to its end as a runner would, skipping the purge's wait with a clock moved past it. */
async function finishMove(tenantId: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const move = (await readMove(env.CONTROL, tenantId))!;
    const clock = move.state === "purging" ? () => move.switched_at! + PURGE_AFTER_MS + 1 : () => Date.now();
    const run = await runMove(env, tenantId, 20, clock);
    if (run.state === "done" || run.state === "failed") return;
  }
  throw new Error(`move did not finish: ${JSON.stringify(await readMove(env.CONTROL, tenantId))}`);
}

/** Keys enough to stay under the tests' rate limit (40 tool calls a minute per key). */
async function keysFor(t: TestTenant, n: number): Promise<string[]> {
  return [
    t.apiKey,
    ...(await Promise.all(Array.from({ length: n - 1 }, () => newKey(t.tenantId)))).map((k) => k.apiKey),
  ];
}

describe("POST /admin/tenants/:id/move", () => {
  it("refuses bad input: an unknown shard 400, an unknown tenant 404, a tenant being deleted, moving or already there 409", async () => {
    const t = await newTenant();
    const other = otherShard(t.shard);
    for (const shard of ["SHARD_9", "CONTROL", "", 7]) {
      const bad = await postMove(t.tenantId, { shard });
      expect(bad.status, String(shard)).toBe(400);
      expect(await bad.json()).toMatchObject({ error: { code: "INVALID_PARAMETER", details: { parameter: "shard" } } });
    }
    expect((await postMove(t.tenantId, { shard: other, extra: 1 })).status).toBe(400);
    expect((await postMove("tn_nobody", { shard: other })).status).toBe(404);
    expect((await postMove(t.tenantId, { shard: t.shard })).status).toBe(409);
    const tenantAdmin = await newKey(t.tenantId, { scopes: ["read", "write", "admin"] });
    expect((await postMove(t.tenantId, { shard: other }, {}, tenantAdmin.apiKey)).status).toBe(403);

    const { binding } = lostQueue();
    const started = await postMove(t.tenantId, { shard: other }, { JOBS: binding });
    expect(started.status).toBe(202);
    expect(await started.json()).toMatchObject({
      tenant_id: t.tenantId,
      shard: t.shard,
      move: { state: "copying", source: t.shard, target: other, copied: 0 },
    });
    expect((await postMove(t.tenantId, { shard: other }, { JOBS: binding })).status).toBe(409);
    expect((await admin("DELETE", `/tenants/${t.tenantId}`)).status).toBe(409);
    await finishMove(t.tenantId);

    // A tenant whose deletion has begun (its job lost, so it stays "deleting"): 409.
    const doomed = await newTenant();
    await call(doomed.apiKey, "memory_batch_store", { memories: [{ content: "one" }, { content: "two" }] });
    expect((await adminWith({ JOBS: lostQueue().binding }, "DELETE", `/tenants/${doomed.tenantId}`)).status).toBe(202);
    const refused = await postMove(doomed.tenantId, { shard: otherShard(doomed.shard) });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({
      error: { code: "CONFLICT", message: expect.stringMatching(/being deleted/) },
    });
  });

  it("moves a tenant under concurrent writes and loses nothing; the source keeps none of it", async () => {
    const t = await newTenant();
    const bystander = await newTenant();
    while (bystander.shard !== t.shard) Object.assign(bystander, await newTenant());
    const source = shardDatabase(env, t.shard);
    const target = otherShard(t.shard);
    await populate(t, "default", "otter");
    await populate(bystander, "default", "otter");
    // A key of its own: the writers below spend the others' rate limit.
    const reader = (await newKey(t.tenantId)).apiKey;
    const guide = await call(reader, "memory_ingest_document", {
      content: "# Ferry guide\n\n## Tides\n\nThe ferry waits for the high tide at the estuary.",
      title: "Ferry guide",
    });
    const doomed = (await call(t.apiKey, "memory_store", { content: "a memory deleted during the move" })).id as string;
    const chunkIdsBefore = await chunkIdsOf(t.tenantId);
    await usageLogSettled(t.tenantId);
    const bystanderBefore = await tableCounts(source, bystander.tenantId);

    const { binding } = lostQueue(); // the test is the move's only runner, so writes and pages interleave
    expect((await postMove(t.tenantId, { shard: target }, { JOBS: binding })).status).toBe(202);

    const keys = await keysFor(t, 8);
    const acknowledged: string[] = [];
    const refusals: string[] = [];
    const unexpected: unknown[] = [];
    let deleted = false;
    let written = 0;
    let switched = false;
    const writer = (async () => {
      while (!switched && written < 200) {
        const key = keys[written % keys.length]!;
        const answer = await callTool(key, "memory_store", {
          content: `ferry note ${written}: the otter crossed at dawn`,
        });
        if (answer.result) {
          acknowledged.push(answer.result.id);
          written++;
          await new Promise((r) => setTimeout(r, 25)); // an agent's pace: the copy overtakes the writes
        } else if (answer.error?.data?.code === "UNAVAILABLE") {
          refusals.push(answer.error.message);
          await new Promise((r) => setTimeout(r, 20));
        } else unexpected.push(answer.error);
        if (written >= 5 && !deleted) {
          const gone = await callTool(key, "context_gc_prune", {
            project_id: "default",
            segment_ids: [doomed],
            action: "delete",
            confirm: true,
          });
          deleted = !gone.error;
          if (gone.error) expect(gone.error.data?.code).toBe("UNAVAILABLE");
        }
      }
    })();
    const runner = (async () => {
      for (;;) {
        const run = await runMove(env, t.tenantId, 1);
        if (run.state !== "copying" && run.state !== "switching") return void (switched = true);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await Promise.all([writer, runner]);
    expect(unexpected).toEqual([]);
    expect(deleted).toBe(true);
    // Writes went on while rows were copied, and were refused (retryable) only while the source was frozen.
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(refusals.length).toBeGreaterThan(0);
    await finishMove(t.tenantId);

    const shown = await (await admin("GET", `/tenants/${t.tenantId}`)).json<any>();
    expect(shown).toMatchObject({ shard: target, move: { state: "done", source: t.shard, target } });
    for (const [table, v] of Object.entries(shown.move.verified as Record<string, { source: string; target: string }>))
      expect(v.target, table).toBe(v.source);
    expect(refusals.every((m) => /retry/i.test(m))).toBe(true);

    // Every acknowledged write is there, once; the deleted memory stays deleted; chunk ids did not change.
    const targetDb = shardDatabase(env, target);
    const found = await targetDb
      .prepare("SELECT id FROM items WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
      .bind(t.tenantId, JSON.stringify(acknowledged))
      .all<{ id: string }>();
    expect(found.results.map((r) => r.id).sort()).toEqual([...acknowledged].sort());
    expect(await targetDb.prepare("SELECT COUNT(*) AS n FROM items WHERE id = ?").bind(doomed).first("n")).toBe(0);
    const chunkIdsAfter = await chunkIdsOf(t.tenantId);
    expect(chunkIdsAfter.filter((id) => chunkIdsBefore.includes(id)).length).toBe(chunkIdsBefore.length - 1); // the deleted memory's one chunk
    for (const id of acknowledged.slice(0, 3)) expect((await call(t.apiKey, "memory_get", { id })).id).toBe(id);
    const hits = await call(t.apiKey, "search", { query: "otter ferry dawn" });
    expect(hits.results.length).toBeGreaterThan(0);
    // Its document moved with it: the row, its chunk's citation and its Markdown (R2 keys by tenant, not shard).
    const moved = await call(reader, "memory_get_document", {
      document_id: guide.document_id,
      include_markdown: true,
    });
    expect(moved).toMatchObject({
      title: "Ferry guide",
      status: "ready",
      markdown: expect.stringContaining("## Tides"),
    });
    const cited = await call(reader, "search", { query: "high tide estuary" });
    expect(cited.results[0].document).toMatchObject({ document_id: guide.document_id, section: "Ferry guide > Tides" });

    // The source holds nothing of the tenant; the bystander on the source is as it was.
    const left = await tableCounts(source, t.tenantId);
    expect(Object.entries(left).filter(([, n]) => n > 0)).toEqual([]);
    expect(
      await source.prepare("SELECT COUNT(*) AS n FROM tenant_fences WHERE tenant_id = ?").bind(t.tenantId).first("n"),
    ).toBe(0);
    expect(await tableCounts(source, bystander.tenantId)).toEqual(bystanderBefore);
    // The moved tenant keeps working on its new shard: writes, jobs (embedding) and the usage log land there.
    const late = await call(t.apiKey, "memory_store", { content: "written after the move" });
    await expect
      .poll(() => targetDb.prepare("SELECT embedded_at FROM items WHERE id = ?").bind(late.id).first("embedded_at"), {
        timeout: 15_000,
      })
      .not.toBeNull();
  }, 120_000);

  it("rows an earlier failed move left on the target do not survive into the tenant's copy", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "the only memory" });
    await usageLogSettled(t.tenantId);
    const target = shardDatabase(env, otherShard(t.shard));
    await target.batch([
      target
        .prepare(
          "INSERT INTO items (id, tenant_id, kind, type, content, tokens, content_hash, created_at, touched_at) VALUES (?, ?, 'memory', 'note', 'stale', 1, 'h', 0, 0)",
        )
        .bind(`stale-${t.tenantId}`, t.tenantId),
      target
        .prepare(
          "INSERT INTO tool_calls (tenant_id, key_id, tool, started_at, duration_ms) VALUES (?, 'k', 'stale', 0, 1)",
        )
        .bind(t.tenantId),
    ]);
    const before = await tableCounts(t.db, t.tenantId);
    expect((await postMove(t.tenantId, { shard: otherShard(t.shard) }, { JOBS: lostQueue().binding })).status).toBe(
      202,
    );
    await finishMove(t.tenantId);
    expect((await readMove(env.CONTROL, t.tenantId))!.state).toBe("done");
    expect(await tableCounts(target, t.tenantId)).toEqual(before);
    expect(
      await target
        .prepare("SELECT COUNT(*) AS n FROM tool_calls WHERE tenant_id = ? AND tool = 'stale'")
        .bind(t.tenantId)
        .first("n"),
    ).toBe(0);
  });

  it("a write refused during the switch is retryable over MCP and the admin API (503 with Retry-After)", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "before the move" });
    const { binding } = lostQueue();
    expect((await postMove(t.tenantId, { shard: otherShard(t.shard) }, { JOBS: binding })).status).toBe(202);
    while ((await readMove(env.CONTROL, t.tenantId))!.state === "copying") await runMove(env, t.tenantId, 1);
    expect((await readMove(env.CONTROL, t.tenantId))!.state).toBe("switching");

    const mcp = await mcpPost(
      t.apiKey,
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "memory_store", arguments: { content: "during the switch" } },
      },
      { accept: "application/json" },
    );
    const result = (await mcp.json<any>()).result;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toMatch(/UNAVAILABLE[\s\S]*retry/i);
    const raw = await fetchImport(
      t.tenantId,
      '{"type":"entity","name":"Heron","entityType":"bird","observations":["imported during the switch"]}\n',
    );
    expect(raw.status).toBe(503);
    expect(raw.headers.get("retry-after")).toBe("2");
    // Reads work throughout.
    expect((await call(t.apiKey, "search", { query: "before the move" })).results.length).toBe(1);
    await finishMove(t.tenantId);
    expect((await call(t.apiKey, "memory_store", { content: "after the move" })).id).toBeTruthy();
  }, 60_000);

  it("a move cut off midway is resumed by the cron sweep and finishes with nothing lost", async () => {
    const t = await newTenant();
    await populate(t, "default", "heron");
    await usageLogSettled(t.tenantId);
    const before = await tableCounts(t.db, t.tenantId);
    const target = otherShard(t.shard);
    const { binding } = lostQueue();
    expect((await postMove(t.tenantId, { shard: target }, { JOBS: binding })).status).toBe(202);
    await runMove(env, t.tenantId, 3); // then the runner dies
    const cut = (await readMove(env.CONTROL, t.tenantId))!;
    expect(cut.state).toBe("copying");
    expect(cut.copied).toBeGreaterThan(0);
    expect(cut.copied).toBeLessThan(cut.total);

    // Not stalled yet: the sweep leaves it alone; once its runner has been silent long enough, it resumes it.
    const early = lostQueue();
    await sweepLostJobs({ ...env, JOBS: early.binding }, Date.now());
    expect(early.sent.filter((m) => m.type === "move" && m.tenantId === t.tenantId)).toEqual([]);
    const swept = lostQueue();
    await sweepLostJobs({ ...env, JOBS: swept.binding }, Date.now() + STALLED_MOVE_AFTER_MS + 1_000);
    const resumed = swept.sent.filter((m) => m.type === "move" && m.tenantId === t.tenantId);
    expect(resumed).toEqual([{ type: "move", tenantId: t.tenantId }]);

    // The queued job runs (and queues itself again) until the move waits to purge.
    let pending: JobMessage[] = resumed;
    for (let i = 0; i < 50 && pending.length > 0; i++) {
      const next = lostQueue();
      await deliverJobs(pending, { JOBS: next.binding });
      pending = next.sent;
      if ((await readMove(env.CONTROL, t.tenantId))!.state === "purging") break;
    }
    expect((await readMove(env.CONTROL, t.tenantId))!.state).toBe("purging");
    await finishMove(t.tenantId);
    // Every row arrived; the move's own jobs log what they spent as they go (usage_hours gains their hour's rows).
    const after = await tableCounts(shardDatabase(env, target), t.tenantId);
    expect({ ...after, usage_hours: 0 }).toEqual({ ...before, usage_hours: 0 });
    expect(after.usage_hours).toBeGreaterThanOrEqual(before.usage_hours!);
    expect(Object.values(await tableCounts(t.db, t.tenantId)).every((n) => n === 0)).toBe(true);
  }, 60_000);
});

describe("the write fence", () => {
  it("every table that holds tenant rows is moved and fenced for inserts, updates and deletes (but the fences, the usage the triggers derive and the posting blocks the target builds anew)", async () => {
    const db = shardDatabase(env, "SHARD_0");
    const { results: tables } = await db
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
      .all<{ name: string; sql: string }>();
    expect([...NOT_MOVED].sort()).toEqual([
      "keyword_block_changes",
      "keyword_block_scans",
      "keyword_blocks",
      "tenant_fences",
      "tenant_usage",
    ]);
    const tenantTables = tables
      .filter((t) => /[`"\s(]tenant_id[`"\s]/.test(t.sql) && !NOT_MOVED.has(t.name))
      .map((t) => t.name)
      .sort();
    expect(TENANT_TABLES_TO_MOVE.map((t) => t.name).sort()).toEqual(tenantTables);
    const { results: triggers } = await db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'fence_%'")
      .all<{ name: string }>();
    const names = new Set(triggers.map((t) => t.name));
    for (const table of tenantTables)
      for (const op of ["insert", "update", "delete"])
        expect(names.has(`fence_${table}_${op}`), `fence_${table}_${op}`).toBe(true);
  });
});

/** POST an import body (the MCP memory server's JSONL) as the operator. */
async function fetchImport(tenantId: string, body: string): Promise<Response> {
  const ctx = createExecutionContext();
  const request = new Request(`${BASE}/admin/tenants/${tenantId}/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    body,
  });
  const response = (await worker.fetch!(request as any, env, ctx)) as unknown as Response;
  await waitOnExecutionContext(ctx);
  return response;
}
