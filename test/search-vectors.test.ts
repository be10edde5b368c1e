import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { UnitMeter } from "../src/billable-units";
import { shardDatabase } from "../src/control/shards";
import { embedItems } from "../src/core/memory/embedding";
import { writeItems } from "../src/core/memory/items";
import { searchChunks } from "../src/core/search/search";
import { meteredD1 } from "../src/db/metered-d1";
import { tenantScope } from "../src/db/scope";
import type { Services, VectorIndex } from "../src/ports";
import { buildServices } from "../src/services";
import { dot } from "../src/shared/vector-math";

// Search's vector part (src/core/search/search-vectors.ts): a keyword hit outside a full vector list gets its cosine
// from its stored vector, and the list's rows are read in search's second round trip, with what the hits point to.

const data = shardDatabase(env, "SHARD_0");

describe("search's vector part", () => {
  it("gives a keyword hit outside a full vector list its exact cosine, in two round trips", async () => {
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

    // The index leaves the keeper's chunk out of a full list: its cosine is read from its stored vector.
    const vectors: VectorIndex = {
      ...base.vectors,
      query: async (tenantId, vector, options) => {
        const matches = await base.vectors.query(tenantId, vector, { ...options, topK: options.topK + 1 });
        return matches.filter((m) => m.chunkId !== keeperChunk).slice(0, options.topK);
      },
      getVectors: base.vectors.getVectors.bind(base.vectors),
      queryMany: base.vectors.queryMany.bind(base.vectors),
      upsert: base.vectors.upsert.bind(base.vectors),
      delete: base.vectors.delete.bind(base.vectors),
      listIds: base.vectors.listIds.bind(base.vectors),
    };
    const meter = new UnitMeter();
    const d1 = meteredD1(data, meter);
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
    expect(meter.current.d1RoundTrips).toBe(2);
    expect(hits.filter((h) => h.vectorRank !== null).length).toBeGreaterThan(0);
    const hit = hits.find((h) => h.itemId === keeper)!;
    expect(hit).toMatchObject({ keywordRank: 1, vectorRank: null });
    const [query] = await base.embedder.embed(["lighthouse keeper lantern"], "query");
    const stored = (await base.vectors.getVectors(scope.tenantId, [keeperChunk])).get(keeperChunk)!;
    expect(hit.similarity).toBeCloseTo(dot(query!, stored), 3); // hits carry 4 decimals
    expect(hit.similarity).toBeGreaterThan(0.3);
  });
});
