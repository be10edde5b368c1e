import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardDatabase } from "../src/control/shards";
import { embedItems } from "../src/core/memory/embedding";
import { writeItems } from "../src/core/memory/items";
import { searchChunks } from "../src/core/search/search";
import { tenantScope } from "../src/db/scope";
import type { Services, VectorIndex } from "../src/ports";
import { buildServices } from "../src/services";
import { dot } from "../src/shared/vector-math";

// Search's vector part (src/core/search/search-vectors.ts): a keyword hit outside a full vector list gets its cosine
// from its stored vector, read beside the list's rows rather than after them (one vector index call less in sequence).

const data = shardDatabase(env, "SHARD_0");

describe("search's vector part", () => {
  it("reads the cosines of keyword hits outside the vector list while the list's rows are read", async () => {
    const base: Services = {
      ...buildServices(
        { ...env, HYBRID_VECTOR_WEIGHT: "1", EMBEDDING_CHANCE_SIMILARITY: "0.05" },
        data,
        { tenantIndex: null },
        () => {},
      ),
      jobs: { send: async () => {} },
    };
    const scope = tenantScope(data, `vectors-${crypto.randomUUID()}`);
    // More texts than the vector list holds (80), so it is full and a hit outside it may still have a vector.
    const texts = [
      ...Array.from({ length: 90 }, (_, i) => `Harbour log ${i}: the ferry left on time.`),
      "The lighthouse keeper mends the lantern.",
    ];
    const written = await writeItems(
      scope,
      base,
      texts.map((content) => ({ project: "p", kind: "memory", type: "note", content })),
    );
    await embedItems(
      scope,
      base,
      written.map((w) => w.id),
    );
    const keeper = written.at(-1)!.id;
    const keeperChunk = (await data
      .prepare("SELECT id FROM chunks WHERE item_id = ?")
      .bind(keeper)
      .first<{ id: number }>())!.id;

    // The index leaves the keeper's chunk out of a full list; the rows' read waits until its cosine has been asked
    // for, which reading it only after the rows never does.
    let listed = false;
    let askCosines!: () => void;
    const cosinesAsked = new Promise<void>((resolve) => (askCosines = resolve));
    const vectors: VectorIndex = {
      ...base.vectors,
      query: async (tenantId, vector, options) => {
        const matches = await base.vectors.query(tenantId, vector, { ...options, topK: options.topK + 1 });
        listed = true;
        return matches.filter((m) => m.chunkId !== keeperChunk).slice(0, options.topK);
      },
      getVectors: (tenantId, chunkIds) => (askCosines(), base.vectors.getVectors(tenantId, chunkIds)),
      queryMany: base.vectors.queryMany.bind(base.vectors),
      upsert: base.vectors.upsert.bind(base.vectors),
      delete: base.vectors.delete.bind(base.vectors),
      listIds: base.vectors.listIds.bind(base.vectors),
    };
    const held = async () => {
      if (listed)
        await Promise.race([
          cosinesAsked,
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error("the rows' read waited for the cosines")), 2000),
          ),
        ]);
    };
    const inner = new WeakMap<object, D1PreparedStatement>();
    const heldUntilAsked = (statement: D1PreparedStatement): D1PreparedStatement => {
      const wrapped = {
        bind: (...values: unknown[]) => heldUntilAsked(statement.bind(...values)),
        all: async () => (await held(), statement.all()),
        first: async (column?: string) => (
          await held(), column === undefined ? statement.first() : statement.first(column)
        ),
        run: async () => (await held(), statement.run()),
        raw: async (options?: { columnNames?: boolean }) => (
          await held(), statement.raw(options as { columnNames?: false })
        ),
      } as unknown as D1PreparedStatement;
      inner.set(wrapped, statement);
      return wrapped;
    };
    const d1 = {
      prepare: (sql: string) => heldUntilAsked(data.prepare(sql)),
      batch: async (statements: D1PreparedStatement[]) => (
        await held(), data.batch(statements.map((s) => inner.get(s) ?? s))
      ),
      exec: (sql: string) => data.exec(sql),
      withSession: (constraint?: string) => data.withSession(constraint),
      dump: () => data.dump(),
    } as unknown as D1Database;
    const unavailable: string[] = [];
    const hits = await searchChunks(
      tenantScope(d1, scope.tenantId),
      { ...base, vectors },
      "lighthouse keeper lantern",
      {},
      5,
      { onVectorUnavailable: (reason) => unavailable.push(reason) },
    );

    expect(unavailable).toEqual([]);
    const hit = hits.find((h) => h.itemId === keeper)!;
    expect(hit).toMatchObject({ keywordRank: 1, vectorRank: null });
    const [query] = await base.embedder.embed(["lighthouse keeper lantern"], "query");
    const stored = (await base.vectors.getVectors(scope.tenantId, [keeperChunk])).get(keeperChunk)!;
    expect(hit.similarity).toBeCloseTo(dot(query!, stored), 3); // hits carry 4 decimals
    expect(hit.similarity).toBeGreaterThan(0.3);
  });
});
