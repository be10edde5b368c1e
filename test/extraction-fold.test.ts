import { describe, expect, it } from "vitest";
import { call, newTenant, type TestTenant, tenantDb, waitForEmbeddings } from "./helpers";

// A derived memory and the turns it came from, as search and memory_context_build give them through the real routes:
// one result (the memory, its ranked source turns folded into it), so the slot its turn would have taken goes to
// the next hit; and a context that brings a memory's source turns while its budget lasts. The memories come from
// the offline rule-based model (LLM=local, the `extraction` vitest project), each sourced to the turn it restates.

const DAY = Date.parse("2023-05-08T13:56:00.000Z");
const at = (minute: number) => new Date(DAY + minute * 60_000).toISOString();
const PADDING = (
  " Anyway, the weekend was long: we cleaned the garage, fixed the fence, walked the dog twice, cooked a big dinner" +
  " for the neighbours, watched two films, argued about the garden, and slept late on Sunday morning."
).repeat(4);

/**
 * Ingests turns into conversation c1 (after `before` turns already there), waits until extraction has read them and
 * every item is embedded; the new turns' ids in order.
 */
async function ingested(
  t: TestTenant,
  messages: { speaker: string; content: string }[],
  before = 0,
): Promise<string[]> {
  const { ids } = await call(t.apiKey, "memory_ingest", {
    conversation_id: "c1",
    project_id: "life",
    messages: messages.map((m, i) => ({ role: "user", ...m, timestamp: at(before + i) })),
  });
  const db = await tenantDb(t.tenantId);
  const started = Date.now();
  for (;;) {
    const read = await db
      .prepare("SELECT extracted_count AS n FROM conversations WHERE tenant_id = ? AND id = 'c1'")
      .bind(t.tenantId)
      .first<{ n: number }>();
    if (read!.n >= before + messages.length) break;
    if (Date.now() - started > 20_000) throw new Error("extraction did not finish");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await waitForEmbeddings(t.tenantId);
  return ids;
}

describe("a derived memory and its source turns", () => {
  it("share one search result, and the slot the turn took goes to the next hit", async () => {
    const t = await newTenant();
    const [said, , other] = await ingested(t, [
      { speaker: "Caroline", content: "I'm a counselor." },
      { speaker: "Melanie", content: "Nice, I paint." },
      { speaker: "Melanie", content: "The counselor at my school retired in spring." },
    ]);
    const memories = (await call(t.apiKey, "memory_list", { project: "life", kinds: ["memory"] })).memories;
    const counselor = memories.find((m: any) => m.preview === "Caroline is a counselor.");
    expect(counselor).toMatchObject({ derived: true, sources: [said] });

    // Turns alone: the turn that says it and the other one that names a counselor.
    const turns = await call(t.apiKey, "search", { query: "counselor", project: "life", kinds: ["message"], limit: 2 });
    expect(turns.results.map((r: any) => r.item_id).sort()).toEqual([said, other].sort());
    // With the memory: the memory and its turn are one result, and the second result is the other turn.
    const both = await call(t.apiKey, "search", { query: "counselor", project: "life", limit: 2 });
    expect(both.results.map((r: any) => r.item_id)).toEqual([counselor.id, other]);
    const [folded] = both.results;
    expect(folded).toMatchObject({ derived: true, sources: [said], kind: "memory" });
    expect(folded.folded_sources).toEqual([
      expect.objectContaining({ item_id: said, content: "I'm a counselor.", session_id: "c1", role: "user" }),
    ]);
    // The result scores as the best of the memory and its turn.
    expect(folded.score).toBeGreaterThanOrEqual(folded.folded_sources[0].score);
    expect(folded.score).toBeGreaterThanOrEqual(both.results[1].score);
    expect(both.results[1].folded_sources).toBeUndefined();
  });

  it("come together in memory_context_build: the memory, then its source turns while the budget lasts", async () => {
    const t = await newTenant();
    const first = (
      await ingested(t, [
        { speaker: "Caroline", content: "I'm a counselor." },
        { speaker: "Melanie", content: "The counselor at the school retired in spring." },
      ])
    )[0]!;
    // Said again later (a duplicate: the memory gains a source), in a long turn.
    const again = (
      await ingested(t, [{ speaker: "Caroline", content: `Did I say it? I'm a counselor.${PADDING}` }], 2)
    )[0]!;
    const memory = (await call(t.apiKey, "memory_list", { project: "life", kinds: ["memory"] })).memories.find(
      (m: any) => m.preview === "Caroline is a counselor.",
    );
    expect([...memory.sources].sort()).toEqual([first, again].sort());
    const build = (budget: number) =>
      call(t.apiKey, "memory_context_build", {
        query: "counselor",
        namespace: "life",
        token_budget: budget,
        include_related: false,
        auto_summarize: false,
        min_similarity: 0,
        use_cache: false,
      });
    const wide = await build(2000);
    expect(wide.memories.some((m: any) => m.source === "profile")).toBe(false); // the query names no one
    const at = wide.memories.findIndex((m: any) => m.id === memory.id);
    // The memory, then its sources (both matched the query themselves: direct, in their order of rank).
    const block = wide.memories.slice(at, at + 3);
    expect(block[0]).toMatchObject({ id: memory.id, source: "direct", derived: true });
    expect(
      block
        .slice(1)
        .map((m: any) => m.id)
        .sort(),
    ).toEqual([first, again].sort());
    for (const m of block.slice(1)) expect(m).toMatchObject({ source: "direct", source_of: memory.id });
    expect(wide.memories.filter((m: any) => m.id === first || m.id === again)).toHaveLength(2);
    expect(wide.total_tokens).toBe(wide.memories.reduce((n: number, m: any) => n + m.tokens, 0));

    // A budget that holds everything but the long turn: it is left out, and the rest comes whole.
    const long = block.find((m: any) => m.id === again).tokens;
    const tight = await build(Math.ceil((wide.total_tokens - long / 2) / 0.9));
    expect(tight.memories.map((m: any) => m.id)).toEqual(
      wide.memories.map((m: any) => m.id).filter((id: string) => id !== again),
    );
    expect(tight.total_tokens).toBe(wide.total_tokens - long);
    expect(tight.total_tokens).toBeLessThanOrEqual(Math.floor(tight.token_budget * 0.9));
  });
});
