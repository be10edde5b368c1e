import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { WorkersAiJsonModel } from "../src/adapters/workers-ai-json-model";
import type { QuotaOverrides } from "../src/config";
import { shardDatabase } from "../src/control/shards";
import { buildMemoryContext } from "../src/core/context/memory-context";
import { readHistory } from "../src/core/extraction/events";
import { readProfile } from "../src/core/extraction/profiles";
import { type ExtractionRun, runExtraction } from "../src/core/extraction/run-extraction";
import { deleteItems } from "../src/core/memory/delete-items";
import { readItems } from "../src/core/memory/item-reads";
import type { NewItem } from "../src/core/memory/item-types";
import { writeItems } from "../src/core/memory/items";
import { searchChunks } from "../src/core/search/search";
import { tenantLimits } from "../src/core/tenants/quotas";
import { usageReport } from "../src/core/tenants/usage-report";
import { readSegmentKeys } from "../src/core/working-set/segments";
import { type TenantScope, tenantScope } from "../src/db/scope";
import type { JobMessage } from "../src/messages";
import type { Services } from "../src/ports";
import { buildServices } from "../src/services";
import {
  capacityExceeded,
  dailyAllocationSpent,
  FakeWorkersAiText,
  jsonModeNotMet,
  LLAMA_4_SCOUT,
  type ScriptEntry,
} from "./fakes/workers-ai-text";

// Extraction's decisions against scripted answers from a strict fake of Workers AI text generation (every request
// is checked against Llama 4 Scout's documented input schema before it is answered), at the domain's entry point:
// the job's runExtraction over a real D1 shard.

const DAY = 86_400_000;
const T0 = Date.parse("2023-05-08T13:56:00Z");
const data = shardDatabase(env, "SHARD_0");

interface Setup {
  scope: TenantScope;
  services: Services;
  fake: FakeWorkersAiText;
  sent: JobMessage[];
  turns: string[];
}

/**
 * A made-up tenant with a conversation of `texts` (each ~100 tokens with its padding, so that with 200-token windows
 * every two turns make a window), and services whose model answers from `script`.
 */
async function setup(texts: string[], script: ScriptEntry[], quotas: QuotaOverrides | null = null): Promise<Setup> {
  const scope = tenantScope(data, `scripted-${crypto.randomUUID()}`, null, quotas);
  const fake = new FakeWorkersAiText(script);
  const sent: JobMessage[] = [];
  const base = buildServices(
    { ...env, LLM: "workers-ai", EXTRACTION_WINDOW_TOKENS: "200" },
    data,
    { tenantIndex: null },
    () => {},
  );
  const services: Services = {
    ...base,
    model: new WorkersAiJsonModel(fake as unknown as Ai, LLAMA_4_SCOUT),
    jobs: { send: async (messages) => void sent.push(...messages) },
  };
  const padding = " We talked for a while about the weather, the garden, the neighbours and the week ahead.".repeat(4);
  const items: NewItem[] = texts.map((text, i) => ({
    project: "p",
    kind: "message",
    type: "message",
    content: text + padding,
    conversationId: "c",
    role: "user",
    speaker: "Caroline",
    createdAt: T0 + i * 10 * DAY,
  }));
  const written = await writeItems(scope, { ...services, model: null }, items);
  return { scope, services, fake, sent, turns: written.map((w) => w.id) };
}

const memory = (text: string, sources: string[], extra: Partial<Record<string, unknown>> = {}) => ({
  type: "fact",
  subject: "Caroline",
  key: null,
  text,
  when: null,
  sources,
  ...extra,
});
const answer = (...memories: Record<string, unknown>[]): ScriptEntry => ({
  answer: { memories },
  usage: { prompt_tokens: 2_500, completion_tokens: 300 },
});

async function run(s: Setup, flush = true): Promise<ExtractionRun> {
  return runExtraction(s.scope, s.services, { conversationId: "c", flush });
}

async function derived(s: Setup) {
  const { results } = await s.scope.d1
    .prepare(
      `SELECT id, content, tier, key, subject, memory_kind, valid_from, valid_to, sources FROM items
       WHERE tenant_id = ? AND memory_kind IS NOT NULL ORDER BY created_at, rowid`,
    )
    .bind(s.scope.tenantId)
    .all<Record<string, any>>();
  return results.map((r): Record<string, any> => ({ ...r, sources: JSON.parse(r.sources) as string[] }));
}

describe("extraction against a strict fake of Workers AI", () => {
  it("sends the documented request: the contract's lines, bare JSON schema, temperature 0, no stream", async () => {
    const s = await setup(["I live in Boston."], [answer(memory("Caroline lives in Boston.", ["T1"]))]);
    await run(s);
    const request = s.fake.requests[0]!.inputs;
    expect(request.response_format.type).toBe("json_schema");
    expect(request.response_format.json_schema.required).toEqual(["memories"]);
    expect(request.temperature).toBe(0);
    expect(request.stream).toBeUndefined();
    const prompt = request.messages[1].content as string;
    expect(prompt).toMatch(
      /^Turns to extract from:\n\[T1\] 2023-05-08T13:56:00\.000Z Caroline \(user\): I live in Boston\./,
    );
    expect(prompt.split("\n")).toHaveLength(2);
  });

  it("the same fact in a later window adds nothing: its sources are merged into the first", async () => {
    const s = await setup(
      ["I live in Boston.", "Nice weather.", "Still in Boston, as I said.", "Bye."],
      [
        answer(memory("Caroline lives in Boston.", ["T1"])),
        // Window 2 shows T1-T2 as context and T3-T4 to extract from; a rewording of the same fact.
        answer(memory("Caroline lives in Boston", ["T3"])),
      ],
    );
    const result = await run(s);
    expect(result.state === "done" && result.windows.map((w) => [w.status, w.added, w.duplicates])).toEqual([
      ["done", 1, 0],
      ["done", 0, 1],
    ]);
    const rows = await derived(s);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.sources).toEqual([s.turns[0], s.turns[2]]);
    const history = await readHistory(s.scope, { conversationId: "c" });
    expect(history.map((e) => e.event)).toEqual(["added", "duplicate"]);
    expect(history[1]!.memoryId).toBe(rows[0]!.id);
  });

  it("a key's new value supersedes the old one, with validity in time; as_of answers what held then", async () => {
    const s = await setup(
      ["I live in Boston.", "Hm.", "I moved to Denver.", "Ok."],
      [
        answer(memory("Caroline lives in Boston.", ["T1"], { key: "home_city" })),
        answer(memory("Caroline lives in Denver.", ["T3"], { key: "home_city" })),
      ],
    );
    await run(s);
    const [boston, denver] = await derived(s);
    expect(boston).toMatchObject({ tier: "superseded", key: "caroline.home_city", valid_from: T0 });
    expect(boston!.valid_to).toBe(T0 + 20 * DAY);
    expect(denver).toMatchObject({ tier: "active", valid_from: T0 + 20 * DAY, valid_to: null });
    const now = await readProfile(s.scope, ["p"], "caroline", 1000);
    expect(now.facts.map((f) => f.text)).toEqual(["Caroline lives in Denver."]);
    const then = await readProfile(s.scope, ["p"], "Caroline", 1000, T0 + 5 * DAY);
    expect(then.facts.map((f) => f.text)).toEqual(["Caroline lives in Boston."]);
    const history = await readHistory(s.scope, { key: "caroline.home_city", project: "p" });
    expect(history.map((e) => [e.event, e.memoryId, e.supersededBy])).toEqual([
      ["added", boston!.id, null],
      ["added", denver!.id, null],
      ["superseded", boston!.id, denver!.id],
    ]);
    // Search and context default to what holds now; as_of answers what held then.
    const memories = { projects: ["p"], kinds: ["memory"], tiers: ["active" as const] };
    const hits = await searchChunks(s.scope, s.services, "Caroline lives", memories, 10);
    expect(hits.map((h) => h.itemId)).toEqual([denver!.id]);
    const past = await searchChunks(s.scope, s.services, "Caroline lives", { ...memories, asOf: T0 + 5 * DAY }, 10);
    expect(past.map((h) => h.itemId)).toEqual([boston!.id]);
    const before = await searchChunks(s.scope, s.services, "Caroline lives", { ...memories, asOf: T0 - DAY }, 10);
    expect(before).toEqual([]);
    const context = (asOf: number | null) =>
      buildMemoryContext(s.scope, s.services, {
        query: "where does Caroline live",
        tokenBudget: 1000,
        topK: 5,
        includeRelated: false,
        maxDepth: 1,
        autoSummarize: false,
        minSimilarity: 0,
        namespace: "p",
        projects: ["p"],
        useCache: false,
        strategy: "relevance",
        asOf,
      });
    const contextThen = (await context(T0 + 5 * DAY)).memories;
    expect(contextThen[0]).toMatchObject({ source: "profile" });
    expect(contextThen[0]!.content).toContain("Caroline lives in Boston.");
    expect(contextThen.filter((m) => m.derived).map((m) => m.id)).toEqual([boston!.id]);
    const contextNow = (await context(null)).memories;
    expect(contextNow[0]!.content).toContain("Caroline lives in Denver.");
    expect(contextNow.filter((m) => m.derived).map((m) => m.id)).toEqual([denver!.id]);
  });

  it("a fact the user stored as given, said again, stays the user's: no sources, and a deleted turn leaves it", async () => {
    const s = await setup(
      ["I live in Boston."],
      [answer(memory("Caroline lives in Boston.", ["T1"], { key: "home_city" }))],
    );
    const [stored] = await writeItems(s.scope, { ...s.services, model: null }, [
      { project: "p", kind: "memory", type: "note", content: "Caroline lives in Boston.", key: "caroline.home_city" },
    ]);
    await run(s);
    expect(await derived(s)).toEqual([]);
    const [event] = await readHistory(s.scope, { conversationId: "c" });
    expect(event).toMatchObject({ event: "duplicate", memoryId: stored!.id, supersededBy: null });
    const rows = await data
      .prepare("SELECT COUNT(*) AS n FROM memory_sources WHERE tenant_id = ?")
      .bind(s.scope.tenantId)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
    const segments = await readSegmentKeys(s.scope, "p", s.turns);
    await deleteItems(s.scope, s.services, [...segments.values()]);
    const left = await readItems(s.scope, [stored!.id]);
    expect(left.get(stored!.id)).toMatchObject({ tier: "active", derived: null });
  });

  it("an event's day, resolved by the model against the turn, is its valid_from", async () => {
    const s = await setup(
      ["I went to a support group yesterday."],
      [answer(memory("Caroline went to a support group.", ["T1"], { type: "event", when: "2023-05-07" }))],
    );
    await run(s);
    const [event] = await derived(s);
    expect(event).toMatchObject({ memory_kind: "event", valid_from: Date.UTC(2023, 4, 7) });
  });

  it("refs the window does not hold are dropped and logged; a memory left with none is dropped", async () => {
    const s = await setup(
      ["I have a dog named Rex."],
      [answer(memory("Caroline has a dog named Rex.", ["T1", "T9"]), memory("Caroline has a cat.", ["T42"]))],
    );
    await run(s);
    const rows = await derived(s);
    expect(rows.map((r) => [r.content, r.sources])).toEqual([["Caroline has a dog named Rex.", [s.turns[0]]]]);
    const history = await readHistory(s.scope, { conversationId: "c" });
    // T9's ref, T42's ref, then the memory T42 left without a source.
    expect(history.map((e) => e.event).sort()).toEqual(["added", "dropped", "dropped", "dropped"]);
    expect(
      history
        .filter((e) => e.event === "dropped")
        .map((e) => e.error)
        .join(" "),
    ).toMatch(/'T9'.*T42|T42.*'T9'/s);
  });

  it("malformed JSON is asked again once, with the error; the second answer counts", async () => {
    const s = await setup(
      ["I'm a counselor."],
      [{ answer: '{"memories": [ oops' }, answer(memory("Caroline is a counselor.", ["T1"]))],
    );
    const result = await run(s);
    expect(result.state === "done" && result.windows[0]).toMatchObject({ status: "done", calls: 2, added: 1 });
    expect(s.fake.requests[1]!.inputs.messages[1].content).toMatch(
      /previous answer was refused: The answer is not valid JSON/,
    );
    expect((await derived(s)).map((r) => r.content)).toEqual(["Caroline is a counselor."]);
  });

  it("an answer broken twice (or JSON mode not met) records a failed window with its next try; the turns stay searchable", async () => {
    const s = await setup(["I'm a counselor."], [{ answer: "I cannot answer in JSON" }, jsonModeNotMet()]);
    const result = await run(s);
    expect(result.state === "done" && result.windows[0]).toMatchObject({ status: "failed", calls: 2, added: 0 });
    expect(await derived(s)).toEqual([]);
    const [failed] = await readHistory(s.scope, { conversationId: "c" });
    expect(failed).toMatchObject({ event: "failed", model: LLAMA_4_SCOUT, tokensIn: expect.any(Number) });
    expect(failed!.error).toMatch(/answer 1: The answer is not valid JSON.*answer 2: .*JSON Mode couldn't be met/);
    expect(failed!.reason).toMatch(/^try 1 of 7 failed; tried again at /);
    const window = await data
      .prepare("SELECT status, attempts, retry_at, created_at FROM extraction_windows WHERE tenant_id = ?")
      .bind(s.scope.tenantId)
      .first<{ status: string; attempts: number; retry_at: number; created_at: number }>();
    expect(window).toMatchObject({ status: "failed", attempts: 1 });
    expect(window!.retry_at - window!.created_at).toBeLessThanOrEqual(5 * 60_000);
    const cursor = await data
      .prepare("SELECT extracted_count FROM conversations WHERE tenant_id = ? AND id = 'c'")
      .bind(s.scope.tenantId)
      .first<{ extracted_count: number }>();
    expect(cursor!.extracted_count).toBe(1);
    const hits = await searchChunks(s.scope, s.services, "counselor", { projects: ["p"] }, 5);
    expect(hits.map((h) => h.itemId)).toEqual([s.turns[0]]);
  });

  it("capacity (3040) is thrown for the queue to retry, with nothing recorded", async () => {
    const s = await setup(["I'm a counselor."], [capacityExceeded()]);
    await expect(run(s)).rejects.toMatchObject({ name: "ModelError", kind: "capacity" });
    const windows = await data
      .prepare("SELECT COUNT(*) AS n FROM extraction_windows WHERE tenant_id = ?")
      .bind(s.scope.tenantId)
      .first<{ n: number }>();
    expect(windows!.n).toBe(0);
  });

  it("the provider's daily allocation (4006) defers to 00:00 UTC, and says so in the log", async () => {
    const s = await setup(["I'm a counselor."], [dailyAllocationSpent()]);
    const result = await run(s);
    expect(result.state).toBe("deferred");
    if (result.state !== "deferred") return;
    expect(result.delaySeconds).toBeGreaterThan(60);
    expect(result.delaySeconds).toBeLessThanOrEqual(43_200);
    const [deferred] = await readHistory(s.scope, { conversationId: "c" });
    expect(deferred).toMatchObject({ event: "deferred" });
    expect(deferred!.error).toMatch(
      /waits until .*T00:00:00\.000Z: the model provider's allocation is spent .*nothing is dropped/,
    );
    expect(await derived(s)).toEqual([]);
  });

  it("the tenant's daily model budget: spent, extraction waits and says why; nothing is dropped", async () => {
    const s = await setup(
      ["I live in Boston.", "Hm.", "I'm a counselor.", "Ok."],
      [answer(memory("Caroline lives in Boston.", ["T1"]))],
      { extraction_neurons_per_day: 50 },
    );
    const first = await run(s);
    // One window (85 neurons: 2,500 tokens in, 300 out) takes the budget past 50: the next waits.
    expect(first.state === "done" && first.windows.map((w) => w.neurons)).toEqual([85]);
    expect(first.state === "done" && first.again).toEqual({ flush: true, delaySeconds: 0 });
    const second = await run(s);
    expect(second).toMatchObject({ state: "deferred" });
    expect(second.state === "deferred" && second.reason).toMatch(/daily model budget of 50 neurons is spent/);
    const report = await usageReport(s.scope, "day", tenantLimits(s.services.config.quotas, s.scope.quotas));
    expect(report.quotas.extraction_neurons_per_day).toEqual({ limit: 50, usage: 85 });
    expect(report.extraction).toMatchObject({ windows: 1, turns: 2, neurons: 85, modelCalls: 1 });
    expect(report.extraction.perTurn).toEqual({ modelCalls: 0.5, tokensIn: 1250, tokensOut: 150, neurons: 42.5 });
    expect(report.extraction.waiting).toMatch(/daily model budget of 50 neurons is spent/);
    expect(s.fake.remaining).toBe(0);
    const cursor = await data
      .prepare("SELECT extracted_count FROM conversations WHERE tenant_id = ? AND id = 'c'")
      .bind(s.scope.tenantId)
      .first<{ extracted_count: number }>();
    expect(cursor!.extracted_count).toBe(2);
  });

  it("a redelivered job adds nothing and asks the model nothing: each window is found done", async () => {
    const s = await setup(["I live in Boston.", "Hm."], [answer(memory("Caroline lives in Boston.", ["T1"]))]);
    await run(s);
    const before = await derived(s);
    await data
      .prepare("UPDATE conversations SET extracted_count = 0, extracted_tokens = 0 WHERE tenant_id = ?")
      .bind(s.scope.tenantId)
      .run();
    const again = await run(s);
    expect(again.state === "done" && again.windows.map((w) => w.status)).toEqual(["skipped"]);
    expect(await derived(s)).toEqual(before);
    expect(s.fake.requests).toHaveLength(1);
  });

  it("a project that does not extract is left alone unless the job forces it", async () => {
    const s = await setup(["I live in Boston."], [answer(memory("Caroline lives in Boston.", ["T1"]))]);
    await data
      .prepare("INSERT INTO project_settings (tenant_id, project, extract, updated_at) VALUES (?, 'p', 0, 0)")
      .bind(s.scope.tenantId)
      .run();
    expect(await run(s)).toEqual({ state: "off" });
    const forced = await runExtraction(s.scope, s.services, { conversationId: "c", flush: true, force: true });
    expect(forced.state === "done" && forced.windows[0]!.added).toBe(1);
    const items = await readItems(
      s.scope,
      (await derived(s)).map((r) => r.id),
    );
    expect([...items.values()][0]!.derived).toMatchObject({ kind: "fact", subject: "Caroline", sources: [s.turns[0]] });
  });
});
