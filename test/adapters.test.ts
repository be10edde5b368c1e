import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { checkEmbeddingSettings, QUERY_INSTRUCTION } from "../src/adapters/embedding-models";
import { LocalEmbedder } from "../src/adapters/local-embedder";
import { EXACT_SCAN_UP_TO, LocalVectorIndex } from "../src/adapters/local-vector-index";
import { QueueProducer } from "../src/adapters/queue-producer";
import { VectorizeVectorIndex } from "../src/adapters/vectorize-index";
import { WorkersAiEmbedder } from "../src/adapters/workers-ai-embedder";
import { WorkersAiReranker } from "../src/adapters/workers-ai-reranker";
import { WorkersAiSummarizer } from "../src/adapters/workers-ai-summarizer";
import { readConfig } from "../src/config";
import { shardDatabase } from "../src/control/shards";
import { ExtractiveSummarizer } from "../src/core/conversations/extractive-summarizer";
import { embedItems } from "../src/core/memory/embedding";
import { writeItems } from "../src/core/memory/items";
import { searchChunks } from "../src/core/search/search";
import { tenantScope } from "../src/db/scope";
import type { JobMessage } from "../src/messages";
import type { Services, VectorIndex } from "../src/ports";
import { buildServices } from "../src/services";
import { truncateToTokens } from "../src/shared/extractive";
import { FakeVectorize } from "./fakes/fake-vectorize";
import { workerTokenCounter } from "./helpers";

const DIMS = 256;
/** The made-up tenants of these tests live on one shard (any would do). */
const shard = shardDatabase(env, "SHARD_0");
const embedder = new LocalEmbedder(DIMS);
const record = async (chunkId: number, text: string, project = "p") => ({
  chunkId,
  itemId: `item-${chunkId}`,
  project,
  kind: "memory",
  type: "note",
  values: (await embedder.embed([text]))[0]!,
});

describe("Vectorize adapter (against a fake of the binding)", () => {
  it("keeps one namespace per tenant and filters by project", async () => {
    const fake = new FakeVectorize(DIMS);
    const index = new VectorizeVectorIndex(fake as unknown as Vectorize, DIMS, shard);
    await index.upsert("tenantA", [await record(1, "red apples"), await record(2, "green apples", "q")]);
    await index.upsert("tenantB", [await record(1, "red apples")]);
    expect([...fake.vectors.keys()].sort()).toEqual(["tenantA:1", "tenantA:2", "tenantB:1"]);
    expect(fake.vectors.get("tenantA:2")).toMatchObject({
      namespace: "tenantA",
      metadata: { project: "q", kind: "memory", type: "note", item_id: "item-2" },
    });

    const query = (await embedder.embed(["apples"]))[0]!;
    expect((await index.query("tenantA", query, { topK: 10 })).map((m) => m.chunkId).sort()).toEqual([1, 2]);
    expect((await index.query("tenantA", query, { topK: 10, projects: ["q"] })).map((m) => m.chunkId)).toEqual([2]);
    expect((await index.query("tenantB", query, { topK: 10 })).map((m) => m.chunkId)).toEqual([1]);
    expect(await index.query("tenantC", query, { topK: 10 })).toEqual([]);
  });

  it("respects topK and batch limits", async () => {
    const fake = new FakeVectorize(DIMS);
    const index = new VectorizeVectorIndex(fake as unknown as Vectorize, DIMS, shard);
    await index.upsert(
      "t",
      await Promise.all(Array.from({ length: 150 }, (_, i) => record(i + 1, `document number ${i}`))),
    );
    const query = (await embedder.embed(["document"]))[0]!;
    expect(await index.query("t", query, { topK: 500 })).toHaveLength(100); // clamped, no metadata returned
    const got = await index.getVectors(
      "t",
      Array.from({ length: 45 }, (_, i) => i + 1),
    ); // 3 getByIds calls of ≤ 20
    expect(got.size).toBe(45);
    expect(got.get(1)!.length).toBe(DIMS);
    await index.delete("t", [1, 2, 3]);
    expect(fake.vectors.size).toBe(147);
    expect((await index.getVectors("other", [4])).size).toBe(0);
  });

  it("reports a dimension mismatch as a configuration error", async () => {
    const index = new VectorizeVectorIndex(new FakeVectorize(768) as unknown as Vectorize, DIMS, shard);
    await expect(index.query("t", new Float32Array(DIMS), { topK: 5 })).rejects.toThrow(
      /index has 768 dimensions but the embedder produces 256/,
    );
  });
});

describe("local vector index", () => {
  it("keeps its in-isolate copy fresh across upserts, rewrites and deletes", async () => {
    const index = new LocalVectorIndex(shard, DIMS);
    await index.upsert("local-fresh", [await record(1, "red apples"), await record(2, "green pears")]);
    const apples = (await embedder.embed(["apples"]))[0]!;
    expect((await index.query("local-fresh", apples, { topK: 1 }))[0]!.chunkId).toBe(1);
    await index.upsert("local-fresh", [await record(3, "apples apples apples")]);
    expect((await index.query("local-fresh", apples, { topK: 1 }))[0]!.chunkId).toBe(3);
    await index.upsert("local-fresh", [await record(3, "bananas")]); // rewritten vector
    expect((await index.query("local-fresh", apples, { topK: 1 }))[0]!.chunkId).toBe(1);
    await index.delete("local-fresh", [1]);
    expect((await index.query("local-fresh", apples, { topK: 5 })).map((m) => m.chunkId).sort()).toEqual([2, 3]);
  });
});

describe("local vector index: rows and statements", () => {
  it("notices a deleted newest row whose rowid a new vector reuses (another isolate's delete)", async () => {
    const index = new LocalVectorIndex(shard, DIMS);
    await index.upsert("local-reuse", [await record(1, "red apples"), await record(2, "green pears")]);
    const pears = (await embedder.embed(["pears"]))[0]!;
    expect((await index.query("local-reuse", pears, { topK: 1 }))[0]!.chunkId).toBe(2);
    // Behind this isolate's back: the newest row goes, and SQLite gives its rowid to the next insert.
    await shard.prepare("DELETE FROM local_vectors WHERE tenant_id = ? AND chunk_id = 2").bind("local-reuse").run();
    await index.upsert("local-reuse", [await record(3, "ripe pears")]);
    const rowids = await shard
      .prepare("SELECT rowid, chunk_id FROM local_vectors WHERE tenant_id = ? ORDER BY rowid")
      .bind("local-reuse")
      .all<{ rowid: number; chunk_id: number }>();
    expect(rowids.results.at(-1)!.chunk_id).toBe(3);
    const matches = await index.query("local-reuse", pears, { topK: 5 });
    expect(matches.map((m) => m.chunkId).sort()).toEqual([1, 3]);
  });

  it("writes a job's vectors in one statement and reads them back bit for bit", async () => {
    const prepared: string[] = [];
    const batches: number[] = [];
    const spy = {
      prepare: (query: string) => (prepared.push(query), shard.prepare(query)),
      batch: (statements: D1PreparedStatement[]) => (batches.push(statements.length), shard.batch(statements)),
    } as unknown as D1Database;
    const index = new LocalVectorIndex(spy, DIMS);
    const records = await Promise.all(
      Array.from({ length: 100 }, (_, i) => record(1000 + i, `note number ${i} about topic ${i % 7}`)),
    );
    await index.upsert("local-one-statement", records);
    expect(prepared).toHaveLength(1);
    expect(batches.filter((n) => n > 1)).toEqual([]);
    const stored = await index.getVectors(
      "local-one-statement",
      records.map((r) => r.chunkId),
    );
    expect(stored.size).toBe(100);
    for (const r of records) expect(stored.get(r.chunkId)).toEqual(r.values);
  });

  it("an upsert writes through to the cached copy: the next query reads back only the newest row", async () => {
    const refreshed: number[] = [];
    const spy = {
      prepare: (query: string) => shard.prepare(query),
      batch: async (statements: D1PreparedStatement[]) => {
        const results = await shard.batch(statements);
        if (statements.length === 2) refreshed.push(results[0]!.results.length); // the refresh: new rows, then the count
        return results;
      },
    } as unknown as D1Database;
    const index = new LocalVectorIndex(spy, DIMS);
    const tenant = "local-write-through";
    await index.upsert(
      tenant,
      await Promise.all(Array.from({ length: 50 }, (_, i) => record(i + 1, `old note ${i} about topic ${i % 5}`))),
    );
    const violin = (await embedder.embed(["violin lessons"]))[0]!;
    await index.query(tenant, violin, { topK: 3 });
    expect(refreshed).toEqual([50]);
    await index.upsert(
      tenant,
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => record(100 + i, i === 7 ? "violin lessons on tuesday" : `new note ${i}`)),
      ),
    );
    const [best] = await index.query(tenant, violin, { topK: 3 });
    expect(best!.chunkId).toBe(107);
    expect(refreshed).toEqual([50, 1]);

    // Another isolate's row lands between: the copy's count disagrees and it reloads, so the row is found.
    await shard
      .prepare(
        "INSERT INTO local_vectors (tenant_id, chunk_id, item_id, project, kind, type, vector) SELECT ?, 500, 'item-500', 'p', 'memory', 'note', vector FROM local_vectors WHERE tenant_id = ? AND chunk_id = 107",
      )
      .bind(tenant, tenant)
      .run();
    await index.upsert(tenant, [await record(600, "cello lessons")]);
    const found = await index.query(tenant, violin, { topK: 3 });
    expect(
      found
        .map((m) => m.chunkId)
        .slice(0, 2)
        .sort(),
    ).toEqual([107, 500]);
  });

  it(`keeps search exact above ${EXACT_SCAN_UP_TO} vectors (only auto-link's queryMany probes lists)`, async () => {
    const index = new LocalVectorIndex(shard, DIMS);
    const words = [
      "river",
      "stone",
      "maple",
      "copper",
      "violin",
      "harbor",
      "lantern",
      "meadow",
      "falcon",
      "glacier",
      "orchid",
      "canyon",
      "ember",
      "thistle",
    ];
    const texts = Array.from(
      { length: EXACT_SCAN_UP_TO + 500 },
      (_, i) =>
        `${words[i % 14]} ${words[(i * 3) % 13]} ${words[(i * 5 + 3) % 11]} ${words[(i * 11) % 9]} note ${i % 41}`,
    );
    const records = await Promise.all(texts.map((t, i) => record(i + 1, t)));
    await index.upsert("local-exact-search", records);
    const queries = await embedder.embed([
      "river maple note 3",
      "violin glacier",
      "ember canyon falcon",
      "stone harbor lantern note 17",
      "orchid meadow",
    ]);
    await index.queryMany("local-exact-search", queries, { topK: 10 }); // clusters the slice
    for (const query of queries) {
      const exact = records
        .map((r) => ({ chunkId: r.chunkId, score: r.values.reduce((s, x, d) => s + x * query[d]!, 0) }))
        .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId);
      const got = await index.query("local-exact-search", query, { topK: 20 });
      expect(got.map((m) => m.score)).toEqual(exact.slice(0, 20).map((m) => expect.closeTo(m.score, 6)));
    }
  });
});

describe("queryMany", () => {
  for (const adapter of ["local", "vectorize"] as const) {
    it(`answers as many single queries would, in order (${adapter})`, async () => {
      const index: VectorIndex =
        adapter === "local"
          ? new LocalVectorIndex(shard, DIMS)
          : new VectorizeVectorIndex(new FakeVectorize(DIMS) as unknown as Vectorize, DIMS, shard);
      const tenant = `many-${adapter}`;
      await index.upsert(
        tenant,
        await Promise.all(
          ["red apples", "green pears", "ripe bananas", "apple pie", "pear tart", "car engine", "engine oil"].map(
            (t, i) => record(i + 1, t),
          ),
        ),
      );
      const queries = await embedder.embed(["apples", "pears", "engine", "nothing alike"]);
      const many = await index.queryMany(tenant, queries, { topK: 3 });
      const single = await Promise.all(queries.map((q) => index.query(tenant, q, { topK: 3 })));
      expect(many).toEqual(single);
      expect(many[0]![0]!.chunkId).toBe(1);
      expect(
        many[2]!
          .slice(0, 2)
          .map((m) => m.chunkId)
          .sort(),
      ).toEqual([6, 7]);
      expect(await index.queryMany(tenant, [], { topK: 3 })).toEqual([]);
      const close = await index.queryMany(tenant, queries, { topK: 3, minScore: 0.3 });
      expect(close).toEqual(single.map((matches) => matches.filter((m) => m.score >= 0.3)));
      expect(close[0]!.length).toBeGreaterThan(0);
      expect(close[3]).toEqual([]);
    });
  }
});

describe("local queryMany over a large slice (inverted lists)", () => {
  it(`still finds each stored vector's own record first above ${EXACT_SCAN_UP_TO} vectors`, async () => {
    const index = new LocalVectorIndex(shard, DIMS);
    const words = [
      "river",
      "stone",
      "maple",
      "copper",
      "violin",
      "harbor",
      "lantern",
      "meadow",
      "falcon",
      "glacier",
      "orchid",
      "canyon",
    ];
    const texts = Array.from(
      { length: EXACT_SCAN_UP_TO + 300 },
      (_, i) => `${words[i % 12]} ${words[(i * 7) % 12]} ${words[(i * 5 + 3) % 12]} record ${i} tag${i % 97}`,
    );
    for (let i = 0; i < texts.length; i += 500)
      await index.upsert("many-large", await Promise.all(texts.slice(i, i + 500).map((t, j) => record(i + j + 1, t))));
    const probes = [5, 777, 1500, 2222, 2290];
    const answers = await index.queryMany("many-large", await embedder.embed(probes.map((i) => texts[i]!)), {
      topK: 5,
    });
    expect(answers.map((a) => a[0]!.chunkId)).toEqual(probes.map((i) => i + 1));
  });
});

describe("tenant isolation in hybrid search, with either vector adapter", () => {
  for (const adapter of ["local", "vectorize"] as const) {
    it(`never returns another tenant's items (${adapter})`, async () => {
      const base = buildServices(env, shard, { tenantIndex: null }, () => {});
      const vectors: VectorIndex =
        adapter === "local"
          ? new LocalVectorIndex(shard, DIMS)
          : new VectorizeVectorIndex(new FakeVectorize(DIMS) as unknown as Vectorize, DIMS, shard);
      const services: Services = { ...base, vectors, jobs: { send: async () => {} } };
      const a = tenantScope(shard, `iso-a-${adapter}`);
      const b = tenantScope(shard, `iso-b-${adapter}`);
      const written = await writeItems(a, services, [
        { project: "default", kind: "memory", type: "note", content: "The vault combination is 4-8-15-16" },
      ]);
      await writeItems(b, services, [
        { project: "default", kind: "memory", type: "note", content: "Bread recipe with flour and water" },
      ]);
      await embedItems(a, services, [written[0]!.id]);
      const own = await searchChunks(a, services, "vault combination", {}, 10);
      expect(own[0]).toMatchObject({ itemId: written[0]!.id, keywordRank: 1, vectorRank: 1 });
      for (const mode of ["hybrid", "keyword", "vector"] as const) {
        const other = await searchChunks(b, services, "vault combination", {}, 50, { mode });
        expect(other.map((h) => h.itemId)).not.toContain(written[0]!.id);
      }
    });
  }
});

describe("Workers AI embedder (against a fake of the binding)", () => {
  it("batches at most 100 texts a call and normalises vectors", async () => {
    const calls: string[][] = [];
    const ai = {
      run: async (model: string, input: { text: string[] }) => {
        expect(model).toBe("@cf/baai/bge-base-en-v1.5");
        calls.push(input.text);
        return { shape: [input.text.length, 4], data: input.text.map(() => [3, 4, 0, 0]) };
      },
    };
    const embedder = new WorkersAiEmbedder(ai as unknown as Ai, "@cf/baai/bge-base-en-v1.5", 4);
    const vectors = await embedder.embed(Array.from({ length: 250 }, (_, i) => `t${i}`));
    expect(calls.map((c) => c.length)).toEqual([100, 100, 50]);
    expect(Array.from(vectors[0]!).map((x) => Math.round(x * 1000) / 1000)).toEqual([0.6, 0.8, 0, 0]);
    const wrong = new WorkersAiEmbedder(ai as unknown as Ai, "@cf/baai/bge-base-en-v1.5", 768);
    await expect(wrong.embed(["x"])).rejects.toThrow(/returned 4-dimensional vectors but EMBEDDING_DIMENSIONS is 768/);
  });

  it("sends qwen3-embedding at most 32 texts a call (the binding refuses more), and an unknown model as few", async () => {
    const sizes: number[] = [];
    const strict = (limit: number) => ({
      run: async (_model: string, input: Record<string, string[]>) => {
        const texts = input.documents ?? input.text ?? [];
        if (texts.length > limit) throw new Error(`AiError: 5006: input has ${texts.length} items; at most ${limit}`);
        sizes.push(texts.length);
        return { data: texts.map(() => Array.from({ length: 1024 }, (_, i) => (i === 0 ? 1 : 0))) };
      },
    });
    const qwen = new WorkersAiEmbedder(strict(32) as unknown as Ai, "@cf/qwen/qwen3-embedding-0.6b", 768);
    expect(qwen.maxBatch).toBe(32);
    expect(await qwen.embed(Array.from({ length: 100 }, (_, i) => `t${i}`))).toHaveLength(100);
    expect(sizes).toEqual([32, 32, 32, 4]);
    const unknown = new WorkersAiEmbedder(strict(32) as unknown as Ai, "@cf/someone/new-embedder", 1024);
    expect(unknown.maxBatch).toBe(32);
  });
});

describe("Workers AI embedding models (against a fake of the binding)", () => {
  const fakeAi = (dimensions: number, seen: unknown[]) => ({
    run: async (_model: string, input: Record<string, string[]>) => {
      seen.push(input);
      const texts = input.queries ?? input.documents ?? input.text ?? [];
      return { data: texts.map(() => Array.from({ length: dimensions }, (_, i) => (i < 2 ? 1 : 0.001))) };
    },
  });

  it("embeds queries and documents as each model expects them", async () => {
    const seen: unknown[] = [];
    const qwen = new WorkersAiEmbedder(fakeAi(1024, seen) as unknown as Ai, "@cf/qwen/qwen3-embedding-0.6b", 1024);
    await qwen.embed(["where do I live"], "query");
    await qwen.embed(["I live in Lyon"]);
    const gemma = new WorkersAiEmbedder(fakeAi(768, seen) as unknown as Ai, "@cf/google/embeddinggemma-300m", 768);
    await gemma.embed(["where do I live"], "query");
    await gemma.embed(["I live in Lyon"], "document");
    const bge = new WorkersAiEmbedder(fakeAi(768, seen) as unknown as Ai, "@cf/baai/bge-base-en-v1.5", 768);
    await bge.embed(["where do I live"], "query");
    expect(seen).toEqual([
      { queries: ["where do I live"], instruction: QUERY_INSTRUCTION },
      { documents: ["I live in Lyon"] },
      { text: ["task: search result | query: where do I live"] },
      { text: ["title: none | text: I live in Lyon"] },
      { text: ["where do I live"] },
    ]);
  });

  it("cuts a Matryoshka model's vectors to EMBEDDING_DIMENSIONS and renormalises; refuses what a model cannot give", async () => {
    const qwen = new WorkersAiEmbedder(fakeAi(1024, []) as unknown as Ai, "@cf/qwen/qwen3-embedding-0.6b", 768);
    const [vector] = await qwen.embed(["x"]);
    expect(vector!.length).toBe(768);
    expect(Math.hypot(...vector!)).toBeCloseTo(1, 5);
    expect(() => checkEmbeddingSettings("@cf/qwen/qwen3-embedding-0.6b", 768)).not.toThrow();
    expect(() => checkEmbeddingSettings("@cf/qwen/qwen3-embedding-0.6b", 1536)).toThrow(
      "EMBEDDING_DIMENSIONS is 1536 but @cf/qwen/qwen3-embedding-0.6b has 1024",
    );
    expect(() => checkEmbeddingSettings("@cf/baai/bge-base-en-v1.5", 512)).toThrow(
      /cannot be shortened; use 768 or a Matryoshka model/,
    );
    expect(() =>
      buildServices(
        { ...env, EMBEDDER: "workers-ai", EMBEDDING_MODEL: "@cf/baai/bge-m3", EMBEDDING_DIMENSIONS: "768" },
        shard,
        { tenantIndex: null },
        () => {},
      ),
    ).toThrow(/bge-m3/);
    expect(readConfig({ ...env, EMBEDDING_MODEL: undefined, EMBEDDING_DIMENSIONS: undefined })).toMatchObject({
      embeddingModel: "@cf/qwen/qwen3-embedding-0.6b",
      embeddingDimensions: 768,
    });
  });
});

describe("rerank stage (Workers AI reranker against a fake of the binding)", () => {
  const fakeAi = (seen: unknown[]) => ({
    run: async (model: string, input: { query: string; contexts: { text: string }[]; top_k: number }) => {
      seen.push({ model, ...input });
      // Scores a text by whether it holds the word "answer"; the response lists best first, as the model does.
      const scored = input.contexts.map((c, id) => ({ id, score: c.text.includes("answer") ? 0.9 : 0.1 }));
      return { response: scored.sort((a, b) => b.score - a.score) };
    },
  });

  it("reorders the best fused hits by the reranker's scores; a failing reranker leaves the fused order", async () => {
    const base = buildServices(env, shard, { tenantIndex: null }, () => {});
    const scope = tenantScope(shard, `rerank-${crypto.randomUUID()}`);
    const written = await writeItems(scope, { ...base, jobs: { send: async () => {} } }, [
      { project: "p", kind: "memory", type: "note", content: "lighthouse lighthouse lighthouse keeper" },
      { project: "p", kind: "memory", type: "note", content: "the keeper of the lighthouse answered: wait" },
    ]);
    const fused = await searchChunks(scope, base, "lighthouse keeper", {}, 2, { mode: "keyword" });
    expect(fused.map((h) => h.itemId)).toEqual([written[0]!.id, written[1]!.id]);

    const seen: any[] = [];
    const rerank = { model: "@cf/baai/bge-reranker-base", candidates: 20 };
    const withReranker = {
      ...base,
      config: { ...base.config, rerank },
      reranker: new WorkersAiReranker(fakeAi(seen) as unknown as Ai, rerank.model),
    };
    const reranked = await searchChunks(scope, withReranker, "lighthouse keeper", {}, 1, { mode: "keyword" });
    expect(reranked.map((h) => h.itemId)).toEqual([written[1]!.id]);
    expect(seen).toEqual([
      {
        model: rerank.model,
        query: "lighthouse keeper",
        contexts: fused.map((h) => ({ text: h.chunkContent })),
        top_k: 2,
      },
    ]);

    const failing = {
      ...withReranker,
      reranker: { name: "down", rerank: async () => Promise.reject(new Error("AI unavailable")) },
    };
    expect(
      (await searchChunks(scope, failing, "lighthouse keeper", {}, 1, { mode: "keyword" })).map((h) => h.itemId),
    ).toEqual([written[0]!.id]);
  });

  it("refuses a response that does not score every text", async () => {
    const ai = { run: async () => ({ response: [{ id: 0, score: 0.5 }] }) };
    await expect(
      new WorkersAiReranker(ai as unknown as Ai, "@cf/baai/bge-reranker-base").rerank("q", ["a", "b"]),
    ).rejects.toThrow("scored 1 of 2 texts");
    expect(
      buildServices({ ...env, RERANK_MODEL: "@cf/baai/bge-reranker-base" }, shard, { tenantIndex: null }, () => {})
        .reranker?.name,
    ).toBe("workers-ai:@cf/baai/bge-reranker-base");
    expect(buildServices(env, shard, { tenantIndex: null }, () => {}).reranker).toBeUndefined();
  });
});

describe("Queue producer", () => {
  it("sends at most 100 messages and ~200 KB per sendBatch, in order", async () => {
    const sent: unknown[][] = [];
    const queue = { sendBatch: async (batch: { body: unknown }[]) => void sent.push(batch.map((m) => m.body)) };
    const ids = (n: number) => Array.from({ length: 100 }, (_, i) => `${crypto.randomUUID()}~${n}-${i}`);
    const messages = Array.from({ length: 120 }, (_, n) => ({
      type: "embed" as const,
      tenantId: "t",
      itemIds: ids(n),
    }));
    await new QueueProducer([queue as unknown as Queue<JobMessage>]).send(messages);
    expect(sent.flat()).toEqual(messages);
    for (const batch of sent) {
      expect(batch.length).toBeLessThanOrEqual(100);
      expect(JSON.stringify(batch).length).toBeLessThan(256 * 1024);
    }
    expect(sent.length).toBeGreaterThan(2); // 120 messages of ~5 KB need more than the two a count limit alone gives
  });
});

describe("fusion with the lexical embedder's default weight", () => {
  it("scores by keyword alone, and a query of words never stored gets nothing (no vector fallback)", async () => {
    const base = buildServices({ ...env, HYBRID_VECTOR_WEIGHT: undefined }, shard, { tenantIndex: null }, () => {});
    expect(base.config.hybridVectorWeight).toBeNull();
    expect(base.embedder.semantic).toBe(false);
    const services: Services = { ...base, jobs: { send: async () => {} } };
    const scope = tenantScope(shard, "fusion-default");
    const written = await writeItems(scope, services, [
      {
        project: "default",
        kind: "memory",
        type: "note",
        content: "The kubernetes cluster autoscaler adds nodes under load",
      },
      { project: "default", kind: "memory", type: "note", content: "Lunch menu for Friday" },
    ]);
    await embedItems(
      scope,
      services,
      written.map((w) => w.id),
    );
    // The words in the other order than the memory's, so proximity adds nothing to the keyword part.
    const keyword = await searchChunks(scope, services, "autoscaler cluster", {}, 5);
    expect(keyword.map((h) => h.itemId)).toEqual([written[0]!.id]);
    expect(keyword[0]).toMatchObject({ keywordRank: 1, vectorRank: null });
    // Both words held once, in a chunk longer than the average: BM25's length normalisation, not rank 1.
    expect(keyword[0]!.score).toBeGreaterThan(0.8);
    expect(keyword[0]!.score).toBeLessThan(1);
    expect(keyword[0]!.similarity).toBeGreaterThan(0); // still reported
    // Misspelt words occur nowhere: the lexical vectors share trigrams with the memory, but below chance.
    expect(await searchChunks(scope, services, "clutser autsocaler", {}, 5)).toEqual([]);
  });
});

describe("Workers AI summarizer (against a fake of the binding)", () => {
  it("asks the model for prose and keeps the extractive fields", async () => {
    const counter = await workerTokenCounter("o200k_base");
    const calls: any[] = [];
    const ai = {
      run: async (model: string, input: any) => {
        calls.push({ model, input });
        return { response: "The team chose Postgres and must ship the migration by Friday. ".repeat(50) };
      },
    };
    const extractive = new ExtractiveSummarizer(counter);
    const summarizer = new WorkersAiSummarizer(
      ai as unknown as Ai,
      "@cf/meta/llama-3.1-8b-instruct",
      extractive,
      (text, limit) => truncateToTokens(text, limit, counter)!.content,
    );
    const messages = [
      { role: "user", content: "Should we use Postgres? We must ship by Friday.", importance: 0.75 },
      { role: "assistant", content: "Yes:\n```sql\nCREATE TABLE t (id int);\n```", importance: 0.5 },
    ];
    const result = await summarizer.summarize(messages, 40);
    expect(calls[0].model).toBe("@cf/meta/llama-3.1-8b-instruct");
    expect(calls[0].input.messages[1].content).toContain("user: Should we use Postgres?");
    expect(calls[0].input.max_tokens).toBe(40);
    expect(result.summary.startsWith("The team chose Postgres")).toBe(true);
    expect(counter.count(result.summary)).toBeLessThanOrEqual(40);
    const base = await extractive.summarize(messages, 40);
    expect(result).toMatchObject({
      codeBlocks: base.codeBlocks,
      keyInsights: base.keyInsights,
      importanceScore: base.importanceScore,
    });
    expect(result.codeBlocks).toEqual(["```sql\nCREATE TABLE t (id int);\n```"]);
  });
});
