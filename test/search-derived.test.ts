import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SEARCH_STAGES } from "../src/config";
import { shardDatabase } from "../src/control/shards";
import type { NewItem } from "../src/core/memory/item-types";
import { writeItems } from "../src/core/memory/items";
import { searchChunks } from "../src/core/search/search";
import { type TenantScope, tenantScope } from "../src/db/scope";
import type { Services } from "../src/ports";
import { buildServices } from "../src/services";

// Derived memories in search's stages (src/core/search/search.ts): a memory and the turn it came from say one thing,
// so relevance feedback reads them as one hit. Keyword evidence only (nothing is embedded here).

const data = shardDatabase(env, "SHARD_0");
const services: Services = {
  ...buildServices({ ...env, SEARCH_STAGES: SEARCH_STAGES.join(",") }, data, { tenantIndex: null }, () => {}),
  jobs: { send: async () => {} },
};
const FILLER = Array.from({ length: 30 }, (_, i) => `Garden note ${i}: water the plants.`);

/**
 * The turn, the memory (derived from the turn, or stored as given), and four other hits of "kayak", the last two
 * longer (so ranked last by their match alone), one of them holding the weekend plans' other words.
 */
async function store(derivedFromTurn: boolean): Promise<{ scope: TenantScope; ids: string[] }> {
  const scope = tenantScope(data, `derived-${crypto.randomUUID()}`);
  const at = Date.parse("2023-05-08T13:56:00Z");
  const [turn] = await writeItems(scope, services, [
    {
      project: "p",
      kind: "message",
      type: "message",
      content: "Kayak river rapids.",
      conversationId: "c",
      role: "user",
      speaker: "Ana",
      createdAt: at,
    },
  ]);
  const memory: NewItem = { project: "p", kind: "memory", type: "note", content: "Ana kayaks rapids." };
  if (derivedFromTurn) memory.derived = { kind: "fact", subject: "Ana", validFrom: at, sources: [turn!.id] };
  const rest = await writeItems(scope, services, [
    memory,
    { project: "p", kind: "memory", type: "note", content: "Kayak paddle lesson." },
    { project: "p", kind: "memory", type: "note", content: "Kayak tent camping weekend plans." },
    { project: "p", kind: "memory", type: "note", content: "Kayak rental prices in town are high this year." },
    {
      project: "p",
      kind: "memory",
      type: "note",
      content: "Kayak storage: keep tent and camping gear dry, always.",
    },
    ...FILLER.map((content): NewItem => ({ project: "p", kind: "memory", type: "note", content })),
  ]);
  return { scope, ids: [turn!.id, ...rest.map((w) => w.id)] };
}

describe("derived memories in search", () => {
  it("feed back once with their source turn, so the next best hit's words feed back too", async () => {
    const last = async (derived: boolean) => {
      const { scope, ids } = await store(derived);
      const [turn, memory, paddle, tent, rental, storage] = ids;
      const hits = await searchChunks(scope, services, "kayak", {}, 10);
      // The first three by their match feed back (FEEDBACK_DOCS); the weekend plans come fourth.
      const byMatch = [...hits].sort((a, b) => a.keywordRank! - b.keywordRank!).map((h) => h.itemId);
      expect(new Set(byMatch.slice(0, 3))).toEqual(new Set([turn, memory, paddle]));
      expect(byMatch[3]).toBe(tent);
      return { order: hits.slice(-2).map((h) => h.itemId), rental, storage };
    };
    // Stored as given, the memory is a hit of its own: the first three are two saying the same thing and the
    // paddle lesson, and the two longest hits keep the order of their match.
    const given = await last(false);
    expect(given.order).toEqual([given.rental, given.storage]);
    // Derived from the turn, it feeds back with it as one hit, the weekend plans' words (tent, camping) feed back
    // too, and they lift the storage tips above the rental prices.
    const derived = await last(true);
    expect(derived.order).toEqual([derived.storage, derived.rental]);
  });
});
