import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SEARCH_STAGES, type SearchStage } from "../src/config";
import { shardDatabase } from "../src/control/shards";
import { embedItems } from "../src/core/memory/embedding";
import type { NewItem } from "../src/core/memory/item-types";
import { writeItems } from "../src/core/memory/items";
import { expansionRead, type NeighbourSource, narrowExpansion } from "../src/core/search/expansion";
import { fusedScore, PROXIMITY_WEIGHT, SPEAKER_WEIGHT, vectorPart } from "../src/core/search/relevance";
import { type SearchHit, searchChunks } from "../src/core/search/search";
import { type TenantScope, tenantScope } from "../src/db/scope";
import type { Services } from "../src/ports";
import { buildServices } from "../src/services";

// Each stage of search (src/core/search/search.ts) against the same data with it alone, with none, and
// with all (SEARCH_STAGES): what it is there to produce appears only with it. Keyword evidence only
// (nothing is embedded here), so the differences are the stages'.

const DAY = 86_400_000;
/** The data shard these tenants (made up here, with no control row) are written to. */
const data = shardDatabase(env, "SHARD_0");

function servicesWith(stages: readonly SearchStage[] = SEARCH_STAGES): Services {
  return {
    ...buildServices({ ...env, SEARCH_STAGES: stages.join(",") }, data, { tenantIndex: null }, () => {}),
    jobs: { send: async () => {} },
  };
}
const without = (stage: SearchStage) => servicesWith(SEARCH_STAGES.filter((s) => s !== stage));
const only = (stage: SearchStage) => servicesWith([stage]);
/** Unrelated memories, so that IDF means something (in a tenant of three texts every word is common). */
const FILLER = Array.from({ length: 30 }, (_, i) => `Garden note ${i}: water the plants.`);

async function store(items: Partial<NewItem>[]): Promise<{ scope: TenantScope; ids: string[] }> {
  const scope = tenantScope(data, `stages-${crypto.randomUUID()}`);
  const written = await writeItems(
    scope,
    servicesWith(),
    items.map((item) => ({
      project: "p",
      kind: item.conversationId ? "message" : "memory",
      type: item.conversationId ? "message" : "note",
      content: "",
      ...item,
    })),
  );
  return { scope, ids: written.map((w) => w.id) };
}

const order = async (scope: TenantScope, services: Services, query: string, now?: number) =>
  (await searchChunks(scope, services, query, {}, 10, { now })).map((h) => h.itemId);

describe("search stages", () => {
  it("time: a date in the query prefers what was said then; a date nothing was said on changes nothing", async () => {
    const { scope, ids } = await store([
      {
        conversationId: "march",
        role: "user",
        speaker: "Ana",
        content: "I cooked risotto.",
        createdAt: Date.UTC(2024, 2, 10),
      },
      {
        conversationId: "april",
        role: "user",
        speaker: "Ana",
        content: "I cooked paella, then I cooked it again for the neighbours.",
        createdAt: Date.UTC(2024, 3, 10),
      },
    ]);
    const [march, april] = ids;
    // Without the stage "March" and "2024" are words nothing holds: the query reads as off-topic.
    expect(await order(scope, without("time"), "What did Ana cook in March 2024?")).toEqual([]);
    expect(await order(scope, only("time"), "What did Ana cook in March 2024?")).toEqual([march, april]);
    expect(await order(scope, servicesWith(), "What did Ana cook in March 2024?")).toEqual([march, april]);
    expect(await order(scope, servicesWith(), "What did Ana cook on 10 March, 2024?")).toEqual([march, april]);
    // Nothing was said in 1999: the words stay words and the scores are those without the stage.
    const plain = await searchChunks(scope, without("time"), "What did Ana cook in 1999?", {}, 10);
    expect(await searchChunks(scope, servicesWith(), "What did Ana cook in 1999?", {}, 10)).toEqual(plain);
  });

  it("time: relative times count back from now", async () => {
    const now = Date.UTC(2026, 10, 23, 15, 0);
    const { scope, ids } = await store([
      { conversationId: "a", role: "user", speaker: "Ana", content: "I cooked risotto.", createdAt: now - DAY },
      {
        conversationId: "b",
        role: "user",
        speaker: "Ana",
        content: "I cooked paella, then I cooked it again for the neighbours.",
        createdAt: now - 10 * DAY,
      },
    ]);
    const [yesterday, earlier] = ids;
    expect(await order(scope, without("time"), "What did Ana cook yesterday?", now)).toEqual([]);
    expect(await order(scope, only("time"), "What did Ana cook yesterday?", now)).toEqual([yesterday, earlier]);
    expect(await order(scope, servicesWith(), "What did Ana cook yesterday?", now)).toEqual([yesterday, earlier]);
    expect(await order(scope, servicesWith(), "What did Ana cook 10 days ago?", now)).toEqual([earlier, yesterday]);
  });

  it("time: a message stating a time, resolved when it was written, answers a question naming that day", async () => {
    // Sunday 14 May 2023: "last Sunday" is 7 May. The other message was written on 10 May, three days after it.
    const { scope, ids } = await store([
      {
        conversationId: "a",
        role: "user",
        speaker: "Ana",
        content: "Last Sunday we finally went to the pottery class with my sister.",
        createdAt: Date.UTC(2023, 4, 14, 18),
      },
      {
        conversationId: "b",
        role: "user",
        speaker: "Ana",
        content: "The pottery class was fun, I love the pottery class.",
        createdAt: Date.UTC(2023, 4, 10, 9),
      },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [stated, written] = ids;
    const stored = await data
      .prepare("SELECT stated_times FROM chunks WHERE tenant_id = ? AND item_id = ?")
      .bind(scope.tenantId, stated)
      .first<string>("stated_times");
    expect(JSON.parse(stored!)).toEqual([[Date.UTC(2023, 4, 7), Date.UTC(2023, 4, 8)]]);
    expect(await order(scope, without("time"), "the pottery class on 7 May 2023")).toEqual([written, stated]);
    expect(await order(scope, servicesWith(), "the pottery class on 7 May 2023")).toEqual([stated, written]);
    // Named without its year: the latest 7 May that something was said or written on.
    expect(await order(scope, servicesWith(), "the pottery class on 7 May", Date.UTC(2026, 10, 23))).toEqual([
      stated,
      written,
    ]);
    // Nothing was written on 7 May, but a message says it happened then: the date is a time, not words nothing holds.
    const scoreOf = async (query: string) =>
      (await searchChunks(scope, servicesWith(), query, {}, 10)).find((h) => h.itemId === stated)!.score;
    expect(await scoreOf("the pottery class on 7 May 2023")).toBe(await scoreOf("the pottery class"));
    // A row written before stated times were kept (NULL) is resolved as it is read, to the same order.
    await data.prepare("UPDATE chunks SET stated_times = NULL WHERE tenant_id = ?").bind(scope.tenantId).run();
    expect(await order(scope, servicesWith(), "the pottery class on 7 May 2023")).toEqual([stated, written]);
  });

  it("speaker: a message said by the participant the query names comes before one that only names them", async () => {
    const { scope, ids } = await store([
      { conversationId: "a", role: "user", speaker: "Jon", content: "Gina, I adopted a puppy named Rex." },
      { conversationId: "b", role: "assistant", speaker: "Gina", content: "I adopted a puppy too, named Max." },
    ]);
    const [jons, ginas] = ids;
    expect(await order(scope, without("speaker"), "Which puppy did Gina adopt?")).toEqual([jons, ginas]);
    expect(await order(scope, only("speaker"), "Which puppy did Gina adopt?")).toEqual([ginas, jons]);
    expect(await order(scope, servicesWith(), "Which puppy did Gina adopt?")).toEqual([ginas, jons]);
  });

  it("speaker: a question naming two participants asks about the first, unless it joins them ('Jon and Gina')", async () => {
    const { scope, ids } = await store([
      { conversationId: "a", role: "user", speaker: "Jon", content: "The store is new and looks great, the store!" },
      { conversationId: "b", role: "assistant", speaker: "Gina", content: "My store is new, it opened today." },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [jons, ginas] = ids;
    // Without the stage Jon's text matches better, by less than the speaker's share: naming one of them decides.
    const [jon, gina] = await searchChunks(
      scope,
      servicesWith([]),
      "What did Gina say about the new store Jon saw?",
      {},
      10,
    );
    expect([jon!.itemId, gina!.itemId]).toEqual([jons, ginas]);
    expect(jon!.score / gina!.score).toBeLessThan(1 + SPEAKER_WEIGHT);
    expect(await order(scope, without("speaker"), "What did Gina say about the new store Jon saw?")).toEqual([
      jons,
      ginas,
    ]);
    expect(await order(scope, servicesWith(), "What did Gina say about the new store Jon saw?")).toEqual([ginas, jons]);
    expect(await order(scope, servicesWith(), "What did Jon say about Gina's new store?")).toEqual([jons, ginas]);
    // Joined, both are asked about: the order stays the one without the stage (Gina's alone would gain and lead).
    expect(await order(scope, without("speaker"), "What do Gina and Jon say about the new store?")).toEqual([
      jons,
      ginas,
    ]);
    expect(await order(scope, servicesWith(), "What do Gina and Jon say about the new store?")).toEqual([jons, ginas]);
  });

  it("when: a question asking when prefers text that states a time", async () => {
    const { scope, ids } = await store([
      { content: "The dentist appointment is on Monday." },
      { content: "The dentist appointment: bring the insurance card to the dentist appointment." },
    ]);
    const [monday, card] = ids;
    expect(await order(scope, without("when"), "When is the dentist appointment?")).toEqual([card, monday]);
    expect(await order(scope, only("when"), "When is the dentist appointment?")).toEqual([monday, card]);
    expect(await order(scope, servicesWith(), "When is the dentist appointment?")).toEqual([monday, card]);
  });

  it("proximity: of two hits holding the same words, the one holding them side by side, in the query's order, comes first", async () => {
    const { scope, ids } = await store([
      ...FILLER.map((content) => ({ content })),
      { content: "The class on Friday is about pottery glazes." },
      { content: "The pottery class on Friday is about glazes." },
    ]);
    const [apart, together] = ids.slice(FILLER.length);
    // The same words, the same lengths: BM25 ties them and the older one comes first.
    expect(await order(scope, without("proximity"), "pottery class")).toEqual([apart, together]);
    expect(await order(scope, only("proximity"), "pottery class")).toEqual([together, apart]);
    expect(await order(scope, servicesWith(), "pottery class")).toEqual([together, apart]);
    // The order counts: "class of pottery" asks for class-pottery (the function word skipped), which neither text holds.
    expect(await order(scope, only("proximity"), "Which class of pottery?")).toEqual([apart, together]);
    const scores = async (services: Services) =>
      (await searchChunks(scope, services, "pottery class", {}, 10)).map((h) => h.score);
    const [plainTogether, plainApart] = [...(await scores(servicesWith([])))].reverse();
    const [raisedTogether, keptApart] = await scores(only("proximity"));
    expect(keptApart).toBe(plainApart);
    expect(raisedTogether).toBeCloseTo(Math.min(1, plainTogether! * (1 + PROXIMITY_WEIGHT)), 3);
  });

  it("proximity raises a hybrid hit's keyword part before fusion, not its vector part", async () => {
    const { scope, ids } = await store([
      ...FILLER.map((content) => ({ content })),
      { content: "The pottery class on Friday is about glazes." },
    ]);
    const together = ids.at(-1)!;
    const hybrid = (stages: string): Services => ({
      ...buildServices(
        { ...env, SEARCH_STAGES: stages, HYBRID_VECTOR_WEIGHT: "1", EMBEDDING_CHANCE_SIMILARITY: "0.05" },
        data,
        { tenantIndex: null },
        () => {},
      ),
      jobs: { send: async () => {} },
    });
    await embedItems(scope, hybrid(""), ids);
    // Two of the query's three words, one of its two pairs: the keyword part gains a quarter.
    const query = "pottery class schedule";
    const [keyword] = await searchChunks(scope, hybrid(""), query, {}, 1, { mode: "keyword" });
    const [hit] = await searchChunks(scope, hybrid("proximity"), query, {}, 1);
    expect([keyword!.itemId, hit!.itemId]).toEqual([together, together]);
    const vector = vectorPart(hit!.similarity, 0.05);
    expect(keyword!.score * 1.25).toBeLessThan(1);
    expect(vector).toBeGreaterThan(0.1);
    expect(hit!.score).toBeCloseTo(fusedScore(keyword!.score * (1 + PROXIMITY_WEIGHT * 0.5), vector, 1), 3);
  });

  it("feedback: the words the best hits share beyond the query lift the hits that hold them", async () => {
    const { scope, ids } = await store([
      { content: "Falcon release: the helm chart." },
      { content: "Falcon release: helm chart." },
      { content: "The Falcon release of the helm chart." },
      { content: "Release notes for the helm chart." },
      { content: "Budget release." },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [notes, budget] = ids.slice(3, 5);
    // The three Falcon notes come first either way; then the shorter "release" match, unless the
    // Falcon notes' shared words (helm chart) count.
    const rest = async (services: Services) => (await order(scope, services, "Falcon release")).slice(3);
    expect(await rest(without("feedback"))).toEqual([budget, notes]);
    expect(await rest(only("feedback"))).toEqual([notes, budget]);
    expect(await rest(servicesWith())).toEqual([notes, budget]);
  });

  it("feedback: among hits that all match fully (score 1), the ones holding the best hits' shared words come first", async () => {
    const { scope, ids } = await store([
      { content: "Kayak river rapids." },
      { content: "Kayak, paddle, river." },
      { content: "Kayak trip: paddle, river, rapids." },
      { content: "Kayak for sale, call Bob." },
      { content: "Kayak on the river rapids." },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [, , , sale, rapids] = ids;
    const hits = async (services: Services) => searchChunks(scope, services, "kayak", {}, 10);
    // One word, held by five short texts: every hit scores 1, so without feedback BM25's strength alone orders them.
    for (const services of [without("feedback"), servicesWith()])
      expect((await hits(services)).map((h) => h.score)).toEqual([1, 1, 1, 1, 1]);
    const last = async (services: Services) => (await hits(services)).slice(3).map((h) => h.itemId);
    expect(await last(without("feedback"))).toEqual([sale, rapids]);
    expect(await last(servicesWith())).toEqual([rapids, sale]);
  });

  it("the best match stays first: feedback and neighbours raise hits that match less up to its score, not past it", async () => {
    const { scope, ids } = await store([
      {
        conversationId: "trip",
        role: "user",
        speaker: "Ana",
        content: "The volcano trail up to the crater took us four long hours in the heat.",
      },
      { conversationId: "trip", role: "assistant", speaker: "Ben", content: "Crater, lava, ash: volcano heaven!" },
      { conversationId: "trip", role: "user", speaker: "Ana", content: "Crater rim, lava fields and ash." },
      { conversationId: "trip", role: "assistant", speaker: "Ben", content: "Lava and ash near the crater, wow." },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [trail, echo, rim, near] = ids;
    const query = "volcano crater trail";
    // The trail matches the query best; the replies match less, but share the words the best hits hold (lava, ash)
    // and sit next to the trail: with that evidence two of them would pass it (0.82 and 0.79 against its 0.79).
    const plain = await searchChunks(scope, servicesWith([]), query, {}, 10);
    expect(plain.map((h) => h.itemId)).toEqual([trail, echo, rim, near]);
    const hits = await searchChunks(scope, servicesWith(), query, {}, 10);
    expect(hits[0]!.itemId).toBe(trail);
    expect(hits[0]!.score).toBeGreaterThan(plain[0]!.score);
    // Held at the trail's score, behind it; the third reply, below it anyway, keeps its own.
    expect(
      hits
        .slice(1, 3)
        .map((h) => h.itemId)
        .sort(),
    ).toEqual([echo, rim].sort());
    expect(hits.slice(1, 3).map((h) => h.score)).toEqual([hits[0]!.score, hits[0]!.score]);
    expect(hits[3]!.itemId).toBe(near);
    expect(hits[3]!.score).toBeLessThan(hits[0]!.score);
  });

  it("neighbours: the turns next to a hit join the results with a share of its score, a half two turns away", async () => {
    const { scope, ids } = await store([
      { conversationId: "sky", role: "user", speaker: "Ana", content: "Did you see the eclipse?" },
      { conversationId: "sky", role: "assistant", speaker: "Ben", content: "Yes! From the hill, with the kids." },
      { conversationId: "sky", role: "user", speaker: "Ana", content: "Lucky you." },
      { conversationId: "sky", role: "assistant", speaker: "Ben", content: "Next time come along." },
    ]);
    const [question, answer, lucky] = ids;
    // Without the stage: the question, and the answer whose context quotes it.
    const plain = await searchChunks(scope, servicesWith([]), "eclipse", {}, 10);
    expect(plain.map((h) => h.itemId)).toEqual([question, answer]);
    const hits = await searchChunks(scope, only("neighbours"), "eclipse", {}, 10);
    expect(hits.map((h) => h.itemId)).toEqual([question, answer, lucky]);
    const [q, a] = [plain[0]!.score, plain[1]!.score];
    const either = (x: number, y: number) => 1 - (1 - x) * (1 - y);
    expect(hits[1]!.score).toBeCloseTo(either(a, 0.3 * q), 3);
    expect(hits[2]!.score).toBeCloseTo(either(0.3 * a, (0.3 * q) / 2), 3);
    // Three turns away, nothing reaches it.
    expect(hits.map((h) => h.itemId)).not.toContain(ids[3]);
  });

  it("neighbours: what a neighbour receives is weighed by the query's context, as its own evidence is", async () => {
    // The same hit in two conversations; the turn before it states a time in one, not in the other.
    const { scope, ids } = await store([
      { conversationId: "a", role: "user", speaker: "Ana", content: "Stopped for gas yesterday." },
      { conversationId: "a", role: "assistant", speaker: "Ben", content: "Canoe trip at the lake, finally!" },
      { conversationId: "b", role: "user", speaker: "Ana", content: "Stopped for gas on the way." },
      { conversationId: "b", role: "assistant", speaker: "Ben", content: "Canoe trip at the lake, finally!" },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [stating, hitA, plain, hitB] = ids;
    // Each neighbour's score as a share of its own conversation's hit (their contexts differ, so the hits' scores do).
    const shares = async (services: Services) => {
      const hits = await searchChunks(scope, services, "When was the canoe trip?", {}, 10);
      const score = (id: string) => hits.find((h) => h.itemId === id)!.score;
      return { stating: score(stating!) / score(hitA!), plain: score(plain!) / score(hitB!) };
    };
    // Without the when stage both receive the same share of their hit.
    const without = await shares(only("neighbours"));
    expect(without.stating).toBeCloseTo(0.3, 2);
    expect(without.plain).toBeCloseTo(0.3, 2);
    // With it, the turn that states a time receives what its own time statement is worth (x 1.3), the other as before.
    const when = await shares(servicesWith(["neighbours", "when"]));
    expect(when.plain).toBeCloseTo(0.3, 2);
    expect(when.stating).toBeCloseTo(0.39, 2);
  });

  it("neighbours: a document's chunks next to a hit join the results, beside a message's next turn", async () => {
    // Six long paragraphs, several chunks; the eclipse is in the third.
    const paragraph = (i: number, lead = "") =>
      `${lead}Part ${i}: ${Array.from({ length: 150 }, (_, w) => `filler${i}x${w % 50}`).join(" ")}`;
    const document = [0, 1, 2, 3, 4, 5]
      .map((i) => paragraph(i, i === 2 ? "The eclipse was bright over the hill. " : ""))
      .join("\n\n");
    const { scope, ids } = await store([
      { content: document, kind: "document", type: "document" },
      { conversationId: "sky", role: "user", speaker: "Ana", content: "Did you see the eclipse?" },
      { conversationId: "sky", role: "assistant", speaker: "Ben", content: "Yes! From the hill, with the kids." },
      { conversationId: "sky", role: "user", speaker: "Ana", content: "Lucky you." },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [doc, , , lucky] = ids;
    const chunksOf = (hits: SearchHit[]) => hits.filter((h) => h.itemId === doc).map((h) => h.chunkIndex);
    const plain = await searchChunks(scope, servicesWith([]), "eclipse", {}, 10);
    const [hit] = chunksOf(plain);
    expect(chunksOf(plain)).toEqual([hit]);
    expect(hit).toBeGreaterThan(2);
    expect(plain.map((h) => h.itemId)).not.toContain(lucky);
    const hits = await searchChunks(scope, only("neighbours"), "eclipse", {}, 10);
    // Both reading orders in one search: the chunks one away in the document, and the turn after the answer.
    expect(chunksOf(hits)).toEqual(expect.arrayContaining([hit, hit! - 1, hit! + 1]));
    expect(chunksOf(hits)).not.toContain(hit! - 3);
    expect(hits.map((h) => h.itemId)).toContain(lucky);
  });

  it("links: an item linked to a hit joins the results, scored by the link's weight", async () => {
    const services = servicesWith();
    const { scope, ids } = await store([
      { content: "JWT authentication with refresh tokens" },
      { content: "Signing keys live in the vault" },
    ]);
    const [jwt, keys] = ids;
    await data
      .prepare(
        "INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES (?, ?, 'item', ?, 'item', ?, 'depends_on', 0.5, 0)",
      )
      .bind(crypto.randomUUID(), scope.tenantId, jwt, keys)
      .run();
    expect(await order(scope, without("links"), "JWT authentication")).toEqual([jwt]);
    const hits = await searchChunks(scope, only("links"), "JWT authentication", {}, 10);
    expect(hits.map((h) => h.itemId)).toEqual([jwt, keys]);
    expect(hits[1]!.score).toBeCloseTo(0.3 * 0.5 * hits[0]!.score, 3);
    // memory_context_build follows links itself: its search leaves them out.
    expect(
      (await searchChunks(scope, services, "JWT authentication", {}, 10, { expandLinks: false })).map((h) => h.itemId),
    ).toEqual([jwt]);
  });

  it("links: a similar_content link (the embedder's judgement) counts as much as the embedder does", async () => {
    const { scope, ids } = await store([
      { content: "JWT authentication with refresh tokens" },
      { content: "Signing keys live in the vault" },
      ...FILLER.map((content) => ({ content })),
    ]);
    const [jwt, keys] = ids;
    await data
      .prepare(
        "INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES (?, ?, 'item', ?, 'item', ?, 'similar_content', 0.9, 0)",
      )
      .bind(crypto.randomUUID(), scope.tenantId, jwt, keys)
      .run();
    const weighing = (weight: string): Services => ({
      ...buildServices(
        { ...env, SEARCH_STAGES: "links", HYBRID_VECTOR_WEIGHT: weight },
        data,
        { tenantIndex: null },
        () => {},
      ),
      jobs: { send: async () => {} },
    });
    // Vectors that carry no weight in hybrid search (the local embedder's default) give their links none.
    expect(await order(scope, weighing("0"), "JWT authentication")).toEqual([jwt]);
    const hits = await searchChunks(scope, weighing("0.5"), "JWT authentication", {}, 10);
    expect(hits.map((h) => h.itemId)).toEqual([jwt, keys]);
    expect(hits[1]!.score).toBeCloseTo(0.3 * 0.9 * 0.5 * hits[0]!.score, 3);
  });

  it("links: one read serves hits that may be sources; those that are keep their items' strongest links", async () => {
    const { scope, ids } = await store([
      { content: "JWT authentication with refresh tokens" },
      { content: "Signing keys live in the vault" },
      ...Array.from({ length: 62 }, (_, i) => ({ content: `Linked note ${i}` })),
    ]);
    const [jwt, keys, ...targets] = ids;
    const link = data.prepare(
      "INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES (?, ?, 'item', ?, 'item', ?, 'depends_on', ?, 0)",
    );
    await data.batch([
      ...targets.slice(0, 60).map((target) => link.bind(crypto.randomUUID(), scope.tenantId, keys, target, 0.9)),
      ...targets.slice(60).map((target) => link.bind(crypto.randomUUID(), scope.tenantId, jwt, target, 0.5)),
    ]);
    const { results: rows } = await data
      .prepare(
        "SELECT id AS chunk_id, item_id, chunk_index, NULL AS conversation_id, NULL AS position FROM chunks WHERE item_id IN (?, ?)",
      )
      .bind(jwt, keys)
      .all<NeighbourSource>();
    const [jwtRow, keysRow] = [jwt, keys].map((id) => rows.find((r) => r.item_id === id)!);
    const chunkOf = new Map(
      (
        await data
          .prepare("SELECT id, item_id FROM chunks WHERE tenant_id = ?")
          .bind(scope.tenantId)
          .all<{ id: number; item_id: string }>()
      ).results.map((r) => [r.item_id, r.id]),
    );
    // The jwt hit's row is held, the keys hit is named by its chunk id alone (a vector hit before its row is read).
    const read = expansionRead(scope, {
      query: "JWT",
      filters: {},
      feedbackFrom: [],
      firstHits: [jwtRow!.chunk_id, keysRow!.chunk_id],
      sources: [jwtRow!, keysRow!.chunk_id],
      neighbours: true,
      links: true,
      similarLinkWeight: 1,
    })!;
    const expansion = read.read(await read.statement.all(), [])!;
    // Each item's strongest MAX_LINKED (50) are read: the keys' 60 would crowd the jwt's two out of one list of 50.
    expect(expansion.links.filter((l) => l.source === keys)).toHaveLength(50);
    const jwtOnly = narrowExpansion(expansion, [jwtRow!]);
    expect(jwtOnly.links.map((l) => l.chunkId)).toEqual(
      targets
        .slice(60)
        .map((t) => chunkOf.get(t)!)
        .sort((a, b) => a - b),
    );
    expect(jwtOnly.links.every((l) => l.weight === 0.5)).toBe(true);
    const both = narrowExpansion(expansion, [jwtRow!, keysRow!]);
    expect(both.links).toHaveLength(50);
    expect(both.links.every((l) => l.source === keys && l.weight === 0.9)).toBe(true);
    expect(both.links.map((l) => l.chunkId)).toEqual(targets.slice(0, 50).map((t) => chunkOf.get(t)!));
  });

  it("SEARCH_STAGES names only known stages", () => {
    expect(() =>
      buildServices({ ...env, SEARCH_STAGES: "time,telepathy" }, data, { tenantIndex: null }, () => {}),
    ).toThrow(/telepathy/);
    expect(
      buildServices({ ...env, SEARCH_STAGES: "" }, data, { tenantIndex: null }, () => {}).config.searchStages.size,
    ).toBe(0);
  });
});
