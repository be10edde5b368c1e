import { createExecutionContext, createMessageBatch, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { readConfig } from "../src/config";
import { shardDatabase, shardNames } from "../src/control/shards";
import { CACHE_VALUE_IN_D1, storeCached } from "../src/core/context/semantic-cache";
import { tenantScope } from "../src/db/scope";
import type { Env } from "../src/env";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import { ADMIN_TOKEN, BASE, call, callTool, type TestTenant, tenantDb } from "./helpers";

/** Tables that hold no tenant's data (the FTS table is checked by rowid instead). */
const SHARED_TABLES = new Set([
  "d1_migrations",
  "sqlite_sequence",
  "_cf_KV",
  "_cf_METADATA",
  "keyword_reindex",
  "reconcile_state",
  "shard_identity",
  "chunks_fts",
  "chunks_fts_instance",
  "chunks_fts_row",
]);
const FTS_SHADOW = /^chunks_fts_(data|idx|content|docsize|config)$/;

/**
 * Rows of a tenant in every table of the control database and of every data shard, enumerated from
 * sqlite_master, so a table added later is counted too; a new table with no tenant_id column fails here
 * until it is classified above. Counts of a table found in several databases add up. FTS rowids are chunk
 * ids of the tenant's own shard (another shard reuses the numbers), so chunks_fts is counted there only.
 */
export async function rowsOfTenant(
  tenant: Pick<TestTenant, "tenantId" | "shard">,
  chunkIds: readonly number[],
): Promise<Record<string, number>> {
  const { tenantId } = tenant;
  const counts: Record<string, number> = {};
  const add = (name: string, n: number) => void (counts[name] = (counts[name] ?? 0) + n);
  for (const shard of [null, ...shardNames(env)]) {
    const db = shard === null ? env.CONTROL : shardDatabase(env, shard);
    const { results: tables } = await db
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
      .all<{ name: string; sql: string }>();
    for (const { name, sql } of tables) {
      if (FTS_SHADOW.test(name)) continue;
      if (name === "tenants") {
        add(
          name,
          (await db.prepare("SELECT COUNT(*) AS n FROM tenants WHERE id = ?").bind(tenantId).first<{ n: number }>())!.n,
        );
        continue;
      }
      if (name === "chunks_fts") {
        if (shard === tenant.shard)
          add(
            name,
            (await db
              .prepare("SELECT COUNT(*) AS n FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?))")
              .bind(JSON.stringify(chunkIds))
              .first<{ n: number }>())!.n,
          );
        continue;
      }
      // D1 refuses PRAGMA table_info; the stored CREATE TABLE text names the columns (ALTER TABLE updates it).
      if (!/[`"\s(]tenant_id[`"\s]/.test(sql)) {
        expect(
          SHARED_TABLES.has(name),
          `table ${name} has no tenant_id column: classify it here and delete its rows with a tenant`,
        ).toBe(true);
        continue;
      }
      add(
        name,
        (await db
          .prepare(`SELECT COUNT(*) AS n FROM "${name}" WHERE tenant_id = ?`)
          .bind(tenantId)
          .first<{ n: number }>())!.n,
      );
    }
  }
  return counts;
}

export async function chunkIdsOf(tenantId: string): Promise<number[]> {
  const { results } = await (await tenantDb(tenantId))
    .prepare("SELECT id FROM chunks WHERE tenant_id = ? ORDER BY id")
    .bind(tenantId)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}

export async function kvKeysOf(tenantId: string): Promise<string[]> {
  return (await env.CACHE.list({ prefix: `ctx:${tenantId}:` })).keys.map((k) => k.name);
}

/**
 * Gives a tenant something in every store: memories (chunks, FTS rows, vectors), a summarized
 * conversation, a relationship and a context link, a current task, a cached context, the usage log.
 */
export async function populate(
  t: TestTenant,
  project: string,
  word: string,
): Promise<{ memoryIds: string[]; messageIds: string[] }> {
  const stored = await call(t.apiKey, "memory_batch_store", {
    memories: [0, 1, 2, 3].map((i) => ({ content: `${word} fact number ${i} about the ${word} harbour` })),
    namespace: project,
  });
  const messageIds: string[] = [];
  for (let i = 0; i < 5; i++) {
    const logged = await call(t.apiKey, "log_chat", {
      conversation_id: `${word}-chat`,
      role: i % 2 ? "assistant" : "user",
      content: `turn ${i}: the ${word} ferry leaves at noon`,
      project_id: project,
    });
    messageIds.push(logged.message_id);
  }
  await call(t.apiKey, "link_resources", {
    source_id: stored.ids[0],
    target_id: stored.ids[1],
    relationship_type: "related_to",
  });
  const chunk = await t.db
    .prepare("SELECT id FROM chunks WHERE item_id = ?")
    .bind(stored.ids[2])
    .first<{ id: number }>();
  await call(t.apiKey, "store_context_links", { message_id: messageIds[0], chunk_ids: [chunk!.id] });
  await call(t.apiKey, "context_set_current_task", { project_id: project, task_id: `${word}-task` });
  // A refused call: the usage log keeps a tool_calls row for every failed call (successes only one in 50).
  expect((await callTool(t.apiKey, "retrieve_by_type", { doc_type: "code" })).error).toBeDefined();
  await waitForTenantJobs(t.tenantId);
  await call(t.apiKey, "memory_context_build", {
    query: `${word} harbour`,
    token_budget: 1000,
    namespace: project,
    min_similarity: 0,
  });
  // A context too large for D1 (a huge token budget's): its value goes to KV, which deletion must empty too. Of the
  // project's current generation, or the store would drop it at once as stale.
  const generation = await t.db
    .prepare("SELECT generation FROM cache_generations WHERE tenant_id = ? AND project = ?")
    .bind(t.tenantId, project)
    .first<number>("generation");
  await storeCached(tenantScope(t.db, t.tenantId), env.CACHE, readConfig(env as unknown as Env).cache, {
    project,
    params: "large",
    generation: generation ?? 0,
    linkSeq: 0,
    linkItems: [],
    query: `${word} everything`,
    vector: new Float32Array(8).fill(0.25),
    value: { context: word.repeat(Math.ceil((CACHE_VALUE_IN_D1 + 1) / word.length)) },
  });
  return { memoryIds: stored.ids, messageIds };
}

/** Until the tenant's items are embedded and linked and its conversations summarized (the real consumer). */
export async function waitForTenantJobs(tenantId: string): Promise<void> {
  await expect
    .poll(
      async () => {
        const row = await (await tenantDb(tenantId))
          .prepare(
            `SELECT (SELECT COUNT(*) FROM items WHERE tenant_id = ?1 AND (embedded_at IS NULL OR linked_at IS NULL))
                + (SELECT COUNT(*) FROM conversations WHERE tenant_id = ?1 AND summarized_count < message_count) AS pending`,
          )
          .bind(tenantId)
          .first<{ pending: number }>();
        return row!.pending;
      },
      { timeout: 20_000, interval: 100 },
    )
    .toBe(0);
}

/** A JOBS binding that keeps what is sent instead of delivering it: a queue whose messages were lost. */
export function lostQueue(): { binding: Queue<JobMessage>; sent: JobMessage[] } {
  const sent: JobMessage[] = [];
  const binding = {
    send: async (body: JobMessage) => void sent.push(body),
    sendBatch: async (messages: Iterable<{ body: JobMessage }>) => void sent.push(...[...messages].map((m) => m.body)),
  } as unknown as Queue<JobMessage>;
  return { binding, sent };
}

/** An admin request through the worker's fetch handler with some bindings replaced. */
export async function adminWith(
  overrides: Partial<typeof env>,
  method: string,
  path: string,
  token = ADMIN_TOKEN,
): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch!(
    new Request(`${BASE}/admin${path}`, { method, headers: { authorization: `Bearer ${token}` } }) as any,
    { ...env, ...overrides },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response as unknown as Response;
}

/** Delivers job messages to the worker's queue handler with some bindings replaced. */
export async function deliverJobs(messages: JobMessage[], overrides: Partial<typeof env> = {}): Promise<void> {
  const batch = createMessageBatch<JobMessage>(
    "context-edge-jobs",
    messages.map((body, i) => ({ id: `job-${Date.now()}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
}
