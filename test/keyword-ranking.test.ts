import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SEARCH_STAGES } from "../src/config";
import { shardDatabase } from "../src/control/shards";
import { REINDEX_CHAIN_STALE_MS, reindexHeartbeat, reindexLegacyChunks } from "../src/core/keyword-index/indexing";
import { searchChunks } from "../src/core/search/search";
import { tenantScope } from "../src/db/scope";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import type { Services } from "../src/ports";
import { buildServices } from "../src/services";
import { ftsIndexText, ftsQuery, indexTokens, keywordCode, storedTerm, tenantIndexText } from "../src/shared/fts-text";
import { call, newTenant, type TestTenant, tenantDb, waitForEmbeddings } from "./helpers";

/** What a user sees of a search: order, ids, scores. */
async function search(t: TestTenant, query: string, mode: string) {
  const found = await call(t.apiKey, "search", { query, mode, limit: 20 });
  return found.results.map((r: any) => ({
    id: r.item_id,
    content: r.content,
    score: r.score,
    similarity: r.similarity,
  }));
}

/** Search's services on a shard with every stage but relevance feedback. */
function withoutFeedback(db: D1Database): Services {
  return {
    ...buildServices(
      { ...env, SEARCH_STAGES: SEARCH_STAGES.filter((s) => s !== "feedback").join(",") },
      db,
      { tenantIndex: null },
      () => {},
    ),
    jobs: { send: async () => {} },
  };
}

/** Deletes an item for good (context_gc_prune, the one destructive path). */
async function remove(t: TestTenant, id: string) {
  const result = await call(t.apiKey, "context_gc_prune", {
    project_id: "default",
    segment_ids: [id],
    action: "delete",
    confirm: true,
  });
  expect(result.pruned_segments).toEqual([id]);
}

async function stats(tenantId: string) {
  return (await tenantDb(tenantId))
    .prepare("SELECT chunks, tokens, legacy_chunks FROM keyword_stats WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ chunks: number; tokens: number; legacy_chunks: number }>();
}

/** The tenant's statistics recomputed from scratch: its chunks, and the tokens FTS5 actually indexed. */
async function recomputedStats(tenantId: string) {
  const code = keywordCode(tenantId);
  const db = await tenantDb(tenantId);
  const [chunks, indexed] = await db.batch<{ n: number; t: number | null; legacy: number }>([
    db
      .prepare(
        "SELECT COUNT(fts_tokens) AS n, SUM(fts_tokens) AS t, COUNT(*) - COUNT(fts_tokens) AS legacy FROM chunks WHERE tenant_id = ?",
      )
      .bind(tenantId),
    db.prepare("SELECT COUNT(*) AS n FROM chunks_fts_instance WHERE substr(term, 1, 6) = ?").bind(code),
  ]);
  return {
    chunks: chunks!.results[0]!.n,
    tokens: chunks!.results[0]!.t ?? 0,
    legacy_chunks: chunks!.results[0]!.legacy,
    indexedTokens: indexed!.results[0]!.n,
  };
}

const B_DOCS = [
  "The zephyrine lamp in the garden flickers at dusk.",
  "Garden notes: water the tomatoes, prune the roses, check the garden hose and the garden gate.",
  "Notes from the meeting about the quarterly garden budget and the lamp supplier.",
  "A short note.",
  "Zephyrine is the name of the old boat; the boat needs paint and new notes on its log.",
  "Recipes: tomato soup, garden salad, lamp-roasted peppers.",
  "東京タワーの近くの庭で、東京の夜景を見た。",
  "京都の庭と東の空。",
];

describe("keyword ranking is per tenant", () => {
  it("a tenant's result order and scores do not move when another tenant stores its rare words", async () => {
    const b = await newTenant();
    await call(b.apiKey, "memory_batch_store", { memories: B_DOCS.map((content) => ({ content })) });
    await waitForEmbeddings(b.tenantId);
    const queries = ["zephyrine garden notes", "lamp", "garden boat paint"];
    const before = [];
    for (const q of queries) for (const mode of ["keyword", "hybrid"]) before.push(await search(b, q, mode));
    expect(before[0]!.map((r: any) => r.content)).toContain(B_DOCS[0]);

    // Tenant A floods the shared index with B's rare word and lots of other text (changing every
    // table-wide statistic: row count, average length, document frequencies).
    const a = await newTenant();
    const filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ".repeat(6);
    for (let i = 0; i < 4; i++) {
      await call(a.apiKey, "memory_batch_store", {
        memories: Array.from({ length: 50 }, (_, j) => ({
          content: `zephyrine zephyrine notes ${i}-${j} ${j % 3 === 0 ? filler : "garden"} lamp`,
        })),
      });
    }
    await waitForEmbeddings(a.tenantId);
    const after = [];
    for (const q of queries) for (const mode of ["keyword", "hybrid"]) after.push(await search(b, q, mode));
    expect(after).toEqual(before);
    // A sees its own documents, ranked by its own statistics.
    expect((await search(a, "zephyrine", "keyword")).length).toBe(20);
  }, 60_000);

  it("ranks as FTS5's bm25() would over the tenant's rows alone", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", { memories: B_DOCS.map((content) => ({ content })) });
    // Reference: a fresh FTS5 table (same tokenizer) holding only this tenant's rows, ranked by bm25().
    await t.db
      .prepare(
        "CREATE VIRTUAL TABLE IF NOT EXISTS reference_fts USING fts5(content, context, tokenize = 'porter unicode61 remove_diacritics 2')",
      )
      .run();
    await t.db.prepare("DELETE FROM reference_fts").run();
    const { results: rows } = await t.db
      .prepare("SELECT id, content, context FROM chunks WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ id: number; content: string; context: string }>();
    await t.db.batch(
      rows.map((r) =>
        t.db
          .prepare("INSERT INTO reference_fts (rowid, content, context) VALUES (?, ?, ?)")
          .bind(r.id, ftsIndexText(r.content), ftsIndexText(r.context)),
      ),
    );
    const contentById = new Map(rows.map((r) => [r.id, r.content]));
    for (const q of ["zephyrine garden notes", "garden", "lamp boat", "the notes", "東京の庭", "東京"]) {
      const match = ftsQuery(q);
      const { results: expected } = await t.db
        .prepare(
          "SELECT rowid AS id FROM reference_fts WHERE reference_fts MATCH ? ORDER BY bm25(reference_fts, 1.0, 0.5), rowid",
        )
        .bind(match)
        .all<{ id: number }>();
      // In BM25's order; hits holding too little of the query (relevance.ts) are left off the end. Relevance feedback
      // reorders hits by the words the best ones share (search-stages.test.ts), so it is left out here.
      const found = (
        await searchChunks(tenantScope(t.db, t.tenantId), withoutFeedback(t.db), q, {}, 20, { mode: "keyword" })
      ).map((h) => h.chunkContent);
      expect(found.length > 0, q).toBe(expected.length > 0);
      expect(found, q).toEqual(expected.slice(0, found.length).map((r) => contentById.get(r.id)));
      // Through the tool, with every stage: the same hits.
      expect(new Set((await search(t, q, "keyword")).map((r: any) => r.content)), q).toEqual(new Set(found));
    }
  });

  it("stores the terms the query side computes (folding, stemming, CJK, digits, prefixes)", async () => {
    const text =
      "Running runners ran quickly; generalizations, agreed feed sing is as yes yellow sky. Café naïve RÉSUMÉ Ærøskøbing łódź Straße " +
      "İstanbul Ελληνικά ς Москва ёлка हिन्दी ภาษาไทย العربية Tiếng Việt 東京タワー 한국어 ＦＵＬＬ x² 3.14159 2026-11-22 µm e\u0301te\u0301";
    const code = keywordCode("some-tenant");
    const db = shardDatabase(env, "SHARD_0"); // scratch tables, on any shard
    await db
      .prepare(
        "CREATE VIRTUAL TABLE IF NOT EXISTS terms_fts USING fts5(content, context, tokenize = 'porter unicode61 remove_diacritics 2')",
      )
      .run();
    await db
      .prepare("CREATE VIRTUAL TABLE IF NOT EXISTS terms_fts_instance USING fts5vocab(terms_fts, instance)")
      .run();
    const indexed = tenantIndexText(code, text);
    await db.batch([
      db.prepare("DELETE FROM terms_fts"),
      db.prepare("INSERT INTO terms_fts (rowid, content, context) VALUES (1, ?, '')").bind(indexed.text),
    ]);
    const { results } = await db
      .prepare('SELECT term FROM terms_fts_instance ORDER BY "offset"')
      .all<{ term: string }>();
    expect(results.map((r) => r.term)).toEqual(indexTokens(text).map((token) => storedTerm(code, token)));
    expect(indexed.tokens).toBe(results.length);
    expect(results.every((r) => r.term.startsWith(code))).toBe(true);
  });

  it("keeps statistics exact through writes and deletes", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_batch_store", {
      memories: B_DOCS.map((content) => ({ content, tags: ["garden"] })),
    });
    await call(t.apiKey, "log_chat", { conversation_id: "c1", role: "user", content: "Where is the zephyrine lamp?" });
    const recomputed = await recomputedStats(t.tenantId);
    expect(await stats(t.tenantId)).toEqual({ chunks: recomputed.chunks, tokens: recomputed.tokens, legacy_chunks: 0 });
    expect(recomputed.tokens).toBe(recomputed.indexedTokens); // lengths counted as FTS5 counts them
    await remove(t, stored.ids[1]);
    const afterDelete = await recomputedStats(t.tenantId);
    expect(afterDelete.chunks).toBe(recomputed.chunks - 1);
    expect(await stats(t.tenantId)).toEqual({
      chunks: afterDelete.chunks,
      tokens: afterDelete.tokens,
      legacy_chunks: 0,
    });
    expect(afterDelete.tokens).toBe(afterDelete.indexedTokens);
  });
});

describe("keyword search limited to projects", () => {
  /** What a search shows, by item: its score and keyword rank. */
  const scores = async (apiKey: string, args: Record<string, unknown>) =>
    new Map<string, number>(
      (await call(apiKey, "search", { mode: "keyword", limit: 50, ...args })).results.map((r: any) => [
        r.item_id,
        r.score,
      ]),
    );

  it("scores a project's chunks as a tenant-wide search does (the tenant's IDF), and finds a chunk written before chunks had a project", async () => {
    const t = await newTenant();
    const stored = async (project: string, content: string) =>
      (await call(t.apiKey, "memory_store", { content, namespace: project })).id as string;
    const garden = [
      await stored("p1", "The zephyrine lamp in the garden flickers at dusk."),
      await stored("p1", "Zephyrine garden notes: water the tomatoes and prune the roses."),
    ];
    const p1 = new Set([...garden, await stored("p1", "A short note about the boat.")]);
    // The other project holds most of the query's words: their document frequencies count it, their postings are not walked.
    for (let i = 0; i < 12; i++) await stored("p2", `Garden journal ${i}: the lamp, the roses and more garden notes.`);
    const db = await tenantDb(t.tenantId);
    expect(
      await db
        .prepare("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ? AND project IS NULL")
        .bind(t.tenantId)
        .first("n"),
    ).toBe(0);

    const query = "zephyrine garden lamp roses notes";
    const everywhere = await scores(t.apiKey, { query });
    const inP1 = await scores(t.apiKey, { query, project: "p1" });
    expect([...inP1.keys()].sort()).toEqual([...garden].sort());
    expect([...everywhere.keys()].filter((id) => p1.has(id)).sort()).toEqual([...garden].sort());
    for (const [id, score] of inP1) expect(score).toBe(everywhere.get(id));

    // A chunk written by a Worker older than the project column has none: still found, and only in its own project.
    await db
      .prepare("UPDATE chunks SET project = NULL WHERE tenant_id = ? AND item_id = ?")
      .bind(t.tenantId, garden[0])
      .run();
    expect(await scores(t.apiKey, { query, project: "p1" })).toEqual(inP1);
    expect((await scores(t.apiKey, { query, project: "p2" })).has(garden[0]!)).toBe(false);
  });
});

describe("rows indexed before tenant-private terms", () => {
  /** Puts a tenant's rows back into the pre-migration state: plain terms, no length, counted as legacy. */
  async function makeLegacy(tenantId: string) {
    const db = await tenantDb(tenantId);
    const { results } = await db
      .prepare("SELECT id, content, context FROM chunks WHERE tenant_id = ?")
      .bind(tenantId)
      .all<{ id: number; content: string; context: string }>();
    await db.batch([
      ...results.flatMap((r) => [
        db.prepare("DELETE FROM chunks_fts WHERE rowid = ?").bind(r.id),
        db
          .prepare("INSERT INTO chunks_fts (rowid, content, context) VALUES (?, ?, ?)")
          .bind(r.id, ftsIndexText(r.content), ftsIndexText(r.context)),
      ]),
      db.prepare("UPDATE chunks SET fts_tokens = NULL WHERE tenant_id = ?").bind(tenantId),
      db
        .prepare("UPDATE keyword_stats SET chunks = 0, tokens = 0, legacy_chunks = ? WHERE tenant_id = ?")
        .bind(results.length, tenantId),
    ]);
    return results.length;
  }

  it("stay findable, and the cron sweep re-indexes them in bounded batches to the same ranking", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_batch_store", { memories: B_DOCS.map((content) => ({ content })) });
    await waitForEmbeddings(t.tenantId);
    const expected = await search(t, "zephyrine garden notes", "keyword");
    const exact = await recomputedStats(t.tenantId);

    const n = await makeLegacy(t.tenantId);
    expect(n).toBe(B_DOCS.length);
    // Legacy rows have no length and count apart, so their scores differ; every hit is still found.
    const legacy = await search(t, "zephyrine garden notes", "keyword");
    expect(legacy.map((r: any) => r.id)).toEqual(expect.arrayContaining(expected.map((r: any) => r.id)));
    // A new write while legacy rows remain: both kinds are found together.
    const extra = await call(t.apiKey, "memory_store", { content: "zephyrine garden, newly written" });
    const mixed = await search(t, "zephyrine garden", "keyword");
    expect(mixed.map((r: any) => r.id)).toContain(extra.id);
    expect(mixed.map((r: any) => r.id)).toContain(stored.ids[0]);
    expect(await stats(t.tenantId)).toMatchObject({ legacy_chunks: B_DOCS.length });

    // Bounded: one batch of 2 re-indexes at most 2, and the rest stays findable.
    await expect(reindexLegacyChunks(t.db, 2)).resolves.toBeLessThanOrEqual(2);
    const remaining = await t.db
      .prepare("SELECT COUNT(*) AS n FROM chunks WHERE fts_tokens IS NULL")
      .first<number>("n");
    expect(remaining).toBeGreaterThan(0);
    expect((await search(t, "zephyrine garden notes", "keyword")).map((r: any) => r.id)).toEqual(
      expect.arrayContaining([...expected.map((r: any) => r.id), extra.id]),
    );

    // The cron sweep finishes the job (other tests' legacy rows, if any, too).
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "*/15 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    await expect
      .poll(
        () =>
          t.db
            .prepare("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ? AND fts_tokens IS NULL")
            .bind(t.tenantId)
            .first("n"),
        { timeout: 15_000 },
      )
      .toBe(0);

    const recomputed = await recomputedStats(t.tenantId);
    expect(await stats(t.tenantId)).toEqual({ chunks: exact.chunks + 1, tokens: recomputed.tokens, legacy_chunks: 0 });
    expect(recomputed.tokens).toBe(recomputed.indexedTokens);
    // No plain terms are left for the tenant's rows.
    const plain = await t.db
      .prepare(
        "SELECT COUNT(*) AS n FROM chunks_fts_instance v JOIN chunks c ON c.id = v.doc WHERE c.tenant_id = ? AND substr(v.term, 1, 6) != ?",
      )
      .bind(t.tenantId, keywordCode(t.tenantId))
      .first<number>("n");
    expect(plain).toBe(0);
    // Same ranking as before the round trip (the new item aside).
    await remove(t, extra.id);
    expect(await search(t, "zephyrine garden notes", "keyword")).toEqual(expected);
  }, 60_000);

  it("a legacy item deleted before its re-index leaves the statistics exact", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_batch_store", { memories: B_DOCS.map((content) => ({ content })) });
    await makeLegacy(t.tenantId);
    await remove(t, stored.ids[0]);
    expect(await stats(t.tenantId)).toEqual({ chunks: 0, tokens: 0, legacy_chunks: B_DOCS.length - 1 });
    while ((await reindexLegacyChunks(t.db, 50)) > 0);
    const recomputed = await recomputedStats(t.tenantId);
    expect(await stats(t.tenantId)).toEqual({ chunks: B_DOCS.length - 1, tokens: recomputed.tokens, legacy_chunks: 0 });
  });

  it("a re-index job runs to the end; a sweep starts a job chain only when none is alive", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", { memories: B_DOCS.map((content) => ({ content })) });
    await makeLegacy(t.tenantId);
    const now = Date.now() + 3_600_000; // later than any heartbeat earlier tests left
    expect(await reindexHeartbeat(t.db, now, true)).toBe(true);
    expect(await reindexHeartbeat(t.db, now + 1000, true)).toBe(false); // a chain is alive
    expect(await reindexHeartbeat(t.db, now + REINDEX_CHAIN_STALE_MS + 1, true)).toBe(true); // it was lost

    const batch = createMessageBatch<JobMessage>("context-edge-jobs", [
      {
        id: "reindex-1",
        timestamp: new Date(),
        attempts: 1,
        body: { type: "reindex", tenantId: null, shard: t.shard },
      },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    await waitOnExecutionContext(ctx);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["reindex-1"]);
    expect(await t.db.prepare("SELECT COUNT(*) AS n FROM chunks WHERE fts_tokens IS NULL").first("n")).toBe(0);
    expect(await stats(t.tenantId)).toMatchObject({ chunks: B_DOCS.length, legacy_chunks: 0 });
  });
});
