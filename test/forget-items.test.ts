import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers";
import { waitForTenantJobs } from "./ownership-fixtures";

const SECRET = "zanzibarquux";
const MEMORY_SECRET = "plinthwobble";

/** The tenant's cached contexts, wherever kept: in D1 (cache_entries.value) or, if larger, in KV. */
async function cachedValues(tenantId: string, db: D1Database): Promise<string[]> {
  const keys = (await env.CACHE.list({ prefix: `ctx:${tenantId}:` })).keys;
  const inKv = await Promise.all(keys.map(async (k) => (await env.CACHE.get(k.name)) ?? ""));
  const inD1 = await db
    .prepare("SELECT value FROM cache_entries WHERE tenant_id = ? AND value IS NOT NULL")
    .bind(tenantId)
    .all<{ value: string }>();
  return [...inKv, ...inD1.results.map((r) => r.value)];
}

const count = (db: D1Database, sql: string, ...params: unknown[]) =>
  db
    .prepare(sql)
    .bind(...params)
    .first<{ n: number }>()
    .then((r) => r!.n);

describe("deleting a message or memory forgets it everywhere", () => {
  it("leaves nothing in FTS, vectors, links, the cache or the conversation's summaries", async () => {
    const t = await newTenant();
    const messageIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const content =
        i === 2
          ? `The vault code word is ${SECRET}, keep it safe.`
          : `Turn ${i}: we planned the harbour trip for Friday.`;
      messageIds.push(
        (await call(t.apiKey, "log_chat", { conversation_id: "c1", role: i % 2 ? "assistant" : "user", content }))
          .message_id,
      );
    }
    const memories = await call(t.apiKey, "memory_batch_store", {
      memories: [
        { content: `The ${MEMORY_SECRET} supplier ships on Tuesdays.` },
        { content: "The harbour opens at six." },
      ],
    });
    const [memoryId, keptMemoryId] = memories.ids as string[];
    await waitForTenantJobs(t.tenantId);
    await call(t.apiKey, "summarize_context", { contextId: "c1" });
    const secretMessage = messageIds[2]!;
    const chunksOf = async (id: string) =>
      (await t.db.prepare("SELECT id FROM chunks WHERE item_id = ?").bind(id).all<{ id: number }>()).results.map(
        (r) => r.id,
      );
    const forgottenChunks = [...(await chunksOf(secretMessage)), ...(await chunksOf(memoryId!))];
    const keptChunk = (await chunksOf(keptMemoryId!))[0]!;
    await call(t.apiKey, "link_resources", {
      source_id: secretMessage,
      target_id: keptMemoryId,
      relationship_type: "references",
    });
    await call(t.apiKey, "link_resources", {
      source_id: keptMemoryId,
      target_id: memoryId,
      relationship_type: "related_to",
    });
    await call(t.apiKey, "store_context_links", { message_id: secretMessage, chunk_ids: [keptChunk] });
    await call(t.apiKey, "store_context_links", { message_id: messageIds[0], chunk_ids: forgottenChunks });
    await call(t.apiKey, "memory_context_build", {
      query: `${MEMORY_SECRET} ${SECRET} harbour`,
      token_budget: 2000,
      min_similarity: 0,
    });

    // Everything below holds the secrets before the deletion, so each check after it can fail.
    const chunkJson = JSON.stringify(forgottenChunks);
    const forgottenIds = JSON.stringify([secretMessage, memoryId, ...forgottenChunks.map(String)]);
    const ftsRows = () =>
      count(t.db, "SELECT COUNT(*) AS n FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?))", chunkJson);
    const vectorRows = () =>
      count(
        t.db,
        "SELECT COUNT(*) AS n FROM local_vectors WHERE tenant_id = ? AND chunk_id IN (SELECT value FROM json_each(?))",
        t.tenantId,
        chunkJson,
      );
    const linkRows = () =>
      count(
        t.db,
        "SELECT COUNT(*) AS n FROM links WHERE tenant_id = ?1 AND (source_id IN (SELECT value FROM json_each(?2)) OR target_id IN (SELECT value FROM json_each(?2)))",
        t.tenantId,
        forgottenIds,
      );
    const summariesQuoting = () =>
      count(
        t.db,
        "SELECT COUNT(*) AS n FROM summaries WHERE tenant_id = ?1 AND instr(summary || key_insights || code_blocks, ?2) > 0",
        t.tenantId,
        SECRET,
      );
    expect(await ftsRows()).toBe(forgottenChunks.length);
    expect(await vectorRows()).toBe(forgottenChunks.length);
    expect(await linkRows()).toBe(5);
    expect(await summariesQuoting()).toBe(2);
    expect((await cachedValues(t.tenantId, t.db)).some((v) => v.includes(MEMORY_SECRET))).toBe(true);
    const generation = () =>
      count(
        t.db,
        "SELECT generation AS n FROM cache_generations WHERE tenant_id = ? AND project = 'default'",
        t.tenantId,
      );
    const generationBefore = await generation();

    const pruned = await call(t.apiKey, "context_gc_prune", {
      project_id: "default",
      segment_ids: [secretMessage, memoryId],
      action: "delete",
      confirm: true,
    });
    expect(pruned.pruned_segments.sort()).toEqual([secretMessage, memoryId].sort());

    expect(await ftsRows()).toBe(0);
    expect(await vectorRows()).toBe(0);
    expect(await linkRows()).toBe(0);
    expect(await summariesQuoting()).toBe(0);
    expect(await generation()).toBeGreaterThan(generationBefore);
    expect(
      (await cachedValues(t.tenantId, t.db)).filter((v) => v.includes(MEMORY_SECRET) || v.includes(SECRET)),
    ).toEqual([]);
    expect(await count(t.db, "SELECT COUNT(*) AS n FROM cache_entries WHERE tenant_id = ?", t.tenantId)).toBe(0);
    // The turn that answered the deleted one carried its start as context: rebuilt from the turn now before it.
    const follower = await t.db
      .prepare("SELECT c.context, i.embedded_at FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.item_id = ?")
      .bind(messageIds[3])
      .first<{ context: string; embedded_at: number | null }>();
    expect(follower!.context).toBe("assistant\nTurn 1: we planned the harbour trip for Friday.");
    for (const query of [SECRET, MEMORY_SECRET])
      expect((await call(t.apiKey, "search", { query, mode: "keyword" })).results).toEqual([]);

    // The conversation is summarized again from the four messages left, without the deleted one.
    await expect
      .poll(
        () =>
          count(t.db, "SELECT COUNT(*) AS n FROM summaries WHERE tenant_id = ? AND conversation_id = 'c1'", t.tenantId),
        { timeout: 15_000, interval: 100 },
      )
      .toBe(1);
    const retrieved = await call(t.apiKey, "retrieve_context", { contextId: "c1" });
    expect(retrieved.messages).toHaveLength(4);
    expect(retrieved.summary.messageCount).toBe(4);
    expect(JSON.stringify(retrieved)).not.toContain(SECRET);
    expect(await summariesQuoting()).toBe(0);
    // What was not deleted is still there and found.
    expect((await call(t.apiKey, "search", { query: "harbour", mode: "keyword" })).results.length).toBeGreaterThan(0);
  }, 60_000);
});
