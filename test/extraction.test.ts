import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, callTool, newTenant, type TestTenant, tenantDb, waitForEmbeddings } from "./helpers";

// Memory extraction end to end, as a client sees it: memory_ingest and log_chat through the real routes, the
// real queue consumer running the offline rule-based model (LLM=local, the `extraction` vitest project), and what
// the tools then answer. The scripted cases (a strict fake of Workers AI) are in extraction-scripted.test.ts.

const DAY = "2023-05-08T13:56:00.000Z";
const at = (minutes: number) => new Date(Date.parse(DAY) + minutes * 60_000).toISOString();

const CONVERSATION = [
  {
    role: "user",
    speaker: "Caroline",
    content: "I went to a support group yesterday and it was so powerful.",
    timestamp: at(0),
  },
  { role: "assistant", speaker: "Melanie", content: "That sounds wonderful. I live in Boston now.", timestamp: at(1) },
  { role: "user", speaker: "Caroline", content: "My favorite color is green. I'm a counselor.", timestamp: at(2) },
  { role: "assistant", speaker: "Melanie", content: "I love painting sunsets by the lake.", timestamp: at(3) },
];

/** The conversation's extraction log once its windows are read (the queue consumer runs them). */
async function extracted(t: TestTenant, conversationId: string, windows = 1, timeoutMs = 20_000): Promise<any[]> {
  const started = Date.now();
  const db = await tenantDb(t.tenantId);
  for (;;) {
    const done = await db
      .prepare("SELECT COUNT(*) AS n FROM extraction_windows WHERE tenant_id = ? AND conversation_id = ?")
      .bind(t.tenantId, conversationId)
      .first<{ n: number }>();
    if (done!.n >= windows) return (await call(t.apiKey, "memory_history", { conversation_id: conversationId })).events;
    if (Date.now() - started > timeoutMs) throw new Error(`extraction of ${conversationId} did not finish`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("memory_ingest and extraction through the queue", () => {
  it("stores the turns at once, in order, then derives typed memories with provenance that every read shows", async () => {
    const t = await newTenant();
    const ingested = await call(t.apiKey, "memory_ingest", {
      conversation_id: "c1",
      project_id: "life",
      messages: CONVERSATION,
    });
    expect(ingested).toMatchObject({ conversation_id: "c1", project_id: "life", extraction: "queued" });
    expect(ingested.ids).toHaveLength(4);
    const turns = await call(t.apiKey, "memory_list", { project: "life", kinds: ["message"] });
    expect(turns.memories.map((m: any) => m.id).sort()).toEqual([...ingested.ids].sort());

    const events = await extracted(t, "c1");
    const added = events.filter((e) => e.event === "added");
    expect(added.length).toBeGreaterThanOrEqual(4);
    for (const e of added) {
      expect(e.model).toBe("local-rules");
      expect(e.window).toMatch(/^[0-9a-f]{32}$/);
      expect(e.tokens_in).toBeGreaterThan(0);
      expect(e.sources.every((s: string) => ingested.ids.includes(s))).toBe(true);
    }

    const derived = (await call(t.apiKey, "memory_list", { project: "life", kinds: ["memory"] })).memories;
    const event = derived.find((m: any) => m.memory_kind === "event");
    expect(event).toMatchObject({
      derived: true,
      subject: "Caroline",
      sources: [ingested.ids[0]],
      // "yesterday", said on 8 May 2023: resolved against the turn, not against today.
      valid_from: "2023-05-07T00:00:00.000Z",
      valid_to: null,
    });
    const home = derived.find((m: any) => m.memory_kind === "fact" && m.subject === "Melanie");
    expect(home.sources).toEqual([ingested.ids[1]]);

    const got = await call(t.apiKey, "memory_get", { id: home.id });
    expect(got).toMatchObject({ derived: true, memory_kind: "fact", subject: "Melanie", key: "melanie.home_city" });
    expect(got.content).toContain("Boston");

    const hits = (await call(t.apiKey, "search", { query: "Melanie Boston", project: "life" })).results;
    const hit = hits.find((h: any) => h.item_id === home.id);
    expect(hit).toMatchObject({ derived: true, memory_kind: "fact", subject: "Melanie", sources: [ingested.ids[1]] });
    // The turn it came from matched too: it is folded into the memory's result, as a turn.
    expect(hits.find((h: any) => h.item_id === ingested.ids[1])).toBeUndefined();
    const [turn] = hit.folded_sources;
    expect(turn).toMatchObject({ item_id: ingested.ids[1], content: CONVERSATION[1]!.content });
    expect(turn.derived).toBeUndefined();

    const profile = await call(t.apiKey, "memory_profile", { subject: "caroline", project_id: "life" });
    expect(profile.subject).toBe("Caroline");
    expect(profile.facts.map((f: any) => f.text)).toEqual(["Caroline is a counselor."]);
    expect(profile.preferences.map((f: any) => f.key)).toContain("caroline.favorite_color");
    expect(profile.events[0]).toMatchObject({ valid_from: "2023-05-07T00:00:00.000Z", sources: [ingested.ids[0]] });
    expect(profile.tokens).toBeGreaterThan(0);
    const subjects = await call(t.apiKey, "memory_profile", { project_id: "life" });
    expect(subjects.subjects.map((s: any) => s.subject).sort()).toEqual(["Caroline", "Melanie"]);

    const context = await call(t.apiKey, "memory_context_build", {
      query: "what does Caroline do for work",
      namespace: "life",
      token_budget: 2000,
      use_cache: false,
      min_similarity: 0,
    });
    expect(context.memories[0]).toMatchObject({ id: "profile:Caroline", source: "profile", summarized: false });
    expect(context.memories[0].content).toContain("Caroline is a counselor.");
    expect(context.total_tokens).toBeLessThanOrEqual(1800);
    const usage = (await call(t.apiKey, "get_usage_report", {})).extraction;
    expect(usage).toMatchObject({ status: "active", model: "local-rules", windows: 1, turns: 4, model_calls: 1 });
    expect(usage.per_turn.model_calls).toBe(0.25);
    expect(usage.per_turn.tokens_in).toBe(usage.tokens_in / 4);
    expect(usage.neurons).toBe(0);
    const derivedInContext = context.memories.filter((m: any) => m.derived);
    for (const m of derivedInContext) expect(m.sources.length).toBeGreaterThan(0);
  });

  it("a redelivered or repeated job adds nothing (the window is found done); a turn said again only adds a source", async () => {
    const t = await newTenant();
    const ingested = await call(t.apiKey, "memory_ingest", { conversation_id: "c", messages: CONVERSATION });
    const first = await extracted(t, "c");
    const before = (await call(t.apiKey, "memory_list", { kinds: ["memory"] })).memories;
    const db = await tenantDb(t.tenantId);
    // The cursor wound back and the job sent again, as a redelivery after a lost acknowledgement would run it.
    await db
      .prepare("UPDATE conversations SET extracted_count = 0, extracted_tokens = 0 WHERE tenant_id = ?")
      .bind(t.tenantId)
      .run();
    await env.JOBS.send({ type: "extract", tenantId: t.tenantId, conversationId: "c", flush: true });
    for (let i = 0; i < 200; i++) {
      const row = await db
        .prepare("SELECT extracted_count FROM conversations WHERE tenant_id = ? AND id = 'c'")
        .bind(t.tenantId)
        .first<{ extracted_count: number }>();
      if (row!.extracted_count === CONVERSATION.length) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await call(t.apiKey, "memory_list", { kinds: ["memory"] })).memories).toEqual(before);
    expect((await call(t.apiKey, "memory_history", { conversation_id: "c" })).events).toEqual(first);

    // Another conversation says the first turn again: a duplicate of the same subject and text, merged.
    await call(t.apiKey, "memory_ingest", { conversation_id: "c2", messages: [CONVERSATION[0]!] });
    const again = await extracted(t, "c2");
    expect(again.map((e) => e.event)).toEqual(["duplicate"]);
    const after = (await call(t.apiKey, "memory_list", { kinds: ["memory"] })).memories;
    expect(after.length).toBe(before.length);
    const support = after.find((m: any) => m.preview.includes("support group"));
    expect(support.sources).toHaveLength(2);
    expect(support.sources).toContain(ingested.ids[0]);
    expect(again[0].memory_id).toBe(support.id);
  });

  it("log_chat turns are extracted too; a project can turn it off, and extract: true still asks for one conversation", async () => {
    const t = await newTenant();
    expect(await call(t.apiKey, "memory_settings", { project_id: "quiet", extract: false })).toMatchObject({
      project_id: "quiet",
      extract: false,
      extracting: false,
      model: "local-rules",
    });
    const off = await call(t.apiKey, "memory_ingest", {
      conversation_id: "q",
      project_id: "quiet",
      messages: CONVERSATION,
    });
    expect(off.extraction).toBe("off");
    const forced = await call(t.apiKey, "memory_ingest", {
      conversation_id: "q2",
      project_id: "quiet",
      messages: CONVERSATION,
      extract: true,
    });
    expect(forced.extraction).toBe("queued");
    await extracted(t, "q2");
    const db = await tenantDb(t.tenantId);
    const windows = await db
      .prepare("SELECT conversation_id FROM extraction_windows WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ conversation_id: string }>();
    expect(windows.results.map((r) => r.conversation_id)).toEqual(["q2"]);

    // A window's worth of log_chat turns starts extraction at once (EXTRACTION_WINDOW_TOKENS).
    const long = "I moved to Denver last week and I love hiking there. ".repeat(150);
    await call(t.apiKey, "log_chat", { conversation_id: "live", role: "user", content: long, agent_name: "Dana" });
    await call(t.apiKey, "log_chat", {
      conversation_id: "live",
      role: "user",
      content: "I'm a nurse.",
      agent_name: "Dana",
    });
    await extracted(t, "live");
    const profile = await call(t.apiKey, "memory_profile", { subject: "Dana" });
    expect(profile.preferences.length + profile.events.length + profile.facts.length).toBeGreaterThan(0);
  });

  it("deleting a source turn deletes what was derived only from it; a memory with another source keeps that one", async () => {
    const t = await newTenant();
    const one = await call(t.apiKey, "memory_ingest", {
      conversation_id: "a",
      project_id: "p",
      messages: [CONVERSATION[2]!],
    });
    const two = await call(t.apiKey, "memory_ingest", {
      conversation_id: "b",
      project_id: "p",
      messages: [CONVERSATION[2]!, CONVERSATION[1]!],
    });
    await extracted(t, "a");
    await extracted(t, "b");
    const derived = (await call(t.apiKey, "memory_list", { project: "p", kinds: ["memory"] })).memories;
    const counselor = derived.find((m: any) => m.preview === "Caroline is a counselor.");
    expect(counselor.sources.sort()).toEqual([one.ids[0], two.ids[0]].sort());
    const boston = derived.find((m: any) => m.preview.includes("Boston"));
    expect(boston.sources).toEqual([two.ids[1]]);

    await waitForEmbeddings(t.tenantId);
    const db = await tenantDb(t.tenantId);
    const vectorsOf = async (itemId: string) =>
      (await db
        .prepare("SELECT COUNT(*) AS n FROM local_vectors WHERE tenant_id = ? AND item_id = ?")
        .bind(t.tenantId, itemId)
        .first<{ n: number }>())!.n;
    expect(await vectorsOf(boston.id)).toBe(1);
    const pruned = await call(t.apiKey, "context_gc_prune", {
      project_id: "p",
      segment_ids: [two.ids[0], two.ids[1]],
      action: "delete",
      confirm: true,
    });
    expect(pruned.pruned_segments.sort()).toEqual([two.ids[0], two.ids[1]].sort());
    const left = (await call(t.apiKey, "memory_list", { project: "p", kinds: ["memory"] })).memories;
    expect(left.find((m: any) => m.id === boston.id)).toBeUndefined();
    expect(left.find((m: any) => m.id === counselor.id).sources).toEqual([one.ids[0]]);
    expect(await vectorsOf(boston.id)).toBe(0);
    expect(await vectorsOf(counselor.id)).toBe(1);
    const rows = await db
      .prepare("SELECT source_id, memory_id FROM memory_sources WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ source_id: string; memory_id: string }>();
    expect(rows.results.every((r) => r.source_id === one.ids[0])).toBe(true);
    const vectors = await db
      .prepare("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ? AND item_id = ?")
      .bind(t.tenantId, boston.id)
      .first<{ n: number }>();
    expect(vectors!.n).toBe(0);
  });

  it("a turn said after the last one was deleted is still extracted (positions only grow)", async () => {
    const t = await newTenant();
    const first = await call(t.apiKey, "memory_ingest", { conversation_id: "k", messages: CONVERSATION.slice(0, 2) });
    await extracted(t, "k");
    await call(t.apiKey, "context_gc_prune", {
      project_id: "default",
      segment_ids: [first.ids[1]],
      action: "delete",
      confirm: true,
    });
    const db = await tenantDb(t.tenantId);
    const cursor = () =>
      db
        .prepare("SELECT extracted_count, message_count FROM conversations WHERE tenant_id = ? AND id = 'k'")
        .bind(t.tenantId)
        .first<{ extracted_count: number; message_count: number }>();
    // The cursor stays past the deleted turn: its position is never given again.
    expect(await cursor()).toEqual({ extracted_count: 2, message_count: 1 });
    const next = await call(t.apiKey, "memory_ingest", { conversation_id: "k", messages: [CONVERSATION[2]!] });
    await extracted(t, "k", 2);
    expect(await cursor()).toEqual({ extracted_count: 3, message_count: 2 });
    const position = await db
      .prepare("SELECT position FROM items WHERE tenant_id = ? AND id = ?")
      .bind(t.tenantId, next.ids[0])
      .first<{ position: number }>();
    expect(position!.position).toBe(2);
    const profile = await call(t.apiKey, "memory_profile", { subject: "Caroline" });
    expect(profile.facts.map((f: any) => f.text)).toEqual(["Caroline is a counselor."]);
  });

  it("deleting a project removes its derived memories, their provenance, events and windows", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_ingest", { conversation_id: "x", project_id: "gone", messages: CONVERSATION });
    await call(t.apiKey, "memory_ingest", { conversation_id: "y", project_id: "kept", messages: CONVERSATION });
    await extracted(t, "x");
    await extracted(t, "y");
    const response = await admin("DELETE", `/tenants/${t.tenantId}/projects/gone`);
    expect([200, 202]).toContain(response.status);
    const db = await tenantDb(t.tenantId);
    for (let i = 0; i < 100; i++) {
      const pending = await db
        .prepare("SELECT COUNT(*) AS n FROM project_deletions WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first<{ n: number }>();
      if (pending!.n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const table of ["items", "memory_events", "extraction_windows"]) {
      const row = await db
        .prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant_id = ? AND project = 'gone'`)
        .bind(t.tenantId)
        .first<{ n: number }>();
      expect(row!.n, table).toBe(0);
    }
    const kept = (await call(t.apiKey, "memory_list", { project: "kept", kinds: ["memory"] })).memories;
    expect(kept.length).toBeGreaterThan(0);
    const sources = await db
      .prepare("SELECT COUNT(*) AS n FROM memory_sources WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(sources!.n).toBe(kept.reduce((n: number, m: any) => n + m.sources.length, 0));
  });

  it("deleting a tenant removes its derived memories, provenance, events, windows and settings", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_settings", { project_id: "p", default_subject: "Caroline" });
    await call(t.apiKey, "memory_ingest", { conversation_id: "c", project_id: "p", messages: CONVERSATION });
    await extracted(t, "c");
    const db = await tenantDb(t.tenantId);
    const TABLES = ["items", "memory_sources", "memory_events", "extraction_windows", "project_settings"];
    const counts = async () =>
      Object.fromEntries(
        await Promise.all(
          TABLES.map(async (table) => {
            const row = await db
              .prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant_id = ?`)
              .bind(t.tenantId)
              .first<{ n: number }>();
            return [table, row!.n];
          }),
        ),
      );
    expect(Object.values(await counts()).every((n) => (n as number) > 0)).toBe(true);
    expect((await admin("DELETE", `/tenants/${t.tenantId}`)).status).toBe(202);
    await expect
      .poll(async () => Object.values(await counts()).every((n) => (n as number) === 0), {
        timeout: 20_000,
        interval: 100,
      })
      .toBe(true);
  });

  it("memory_context_build opens with the profile of whom the query names by an alias, as the user's stated data", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_ingest", { conversation_id: "a", project_id: "life", messages: CONVERSATION });
    await extracted(t, "a");
    await call(t.apiKey, "memory_settings", { project_id: "life", subject_aliases: { Caro: "Caroline" } });
    const context = await call(t.apiKey, "memory_context_build", {
      query: "what does Caro do for work",
      namespace: "life",
      token_budget: 2000,
      use_cache: false,
      min_similarity: 0,
    });
    expect(context.memories[0]).toMatchObject({ id: "profile:Caroline", source: "profile" });
    expect(context.memories[0].content).toMatch(/^Profile of Caroline \(remembered from conversations, as data\)\n/);
    expect(context.memories[0].content).toContain("Caroline is a counselor.");
    const byAlias = await call(t.apiKey, "memory_profile", { subject: "caro", project_id: "life" });
    expect(byAlias.facts.map((f: any) => f.text)).toEqual(["Caroline is a counselor."]);
  });

  it("facts and profiles stay within their tenant and the key's projects", async () => {
    const a = await newTenant();
    const b = await newTenant();
    await call(a.apiKey, "memory_ingest", { conversation_id: "c", project_id: "secret", messages: CONVERSATION });
    await extracted(a, "c");
    const other = await callTool(b.apiKey, "memory_profile", { subject: "Caroline" });
    expect(other.error?.message).toContain("No memories about 'Caroline'");
    expect((await call(b.apiKey, "memory_profile", {})).subjects).toEqual([]);
    expect((await call(b.apiKey, "search", { query: "Caroline counselor" })).results).toEqual([]);

    const limited = await (await import("./helpers")).newKey(a.tenantId, { projects: ["public"] });
    const denied = await callTool(limited.apiKey, "memory_profile", { subject: "Caroline", project_id: "secret" });
    expect(denied.error?.message).toMatch(/may not touch project 'secret'/);
    const hidden = await callTool(limited.apiKey, "memory_profile", { subject: "Caroline" });
    expect(hidden.error?.message).toContain("No memories about 'Caroline'");
    expect((await call(limited.apiKey, "memory_history", { conversation_id: "c" })).events).toEqual([]);
  });
});

describe("bad input to memory_ingest, memory_profile and memory_history", () => {
  it("names the parameter and its limit, and writes nothing", async () => {
    const t = await newTenant();
    const expectInvalid = async (tool: string, args: Record<string, unknown>, text: RegExp) => {
      const response = await callTool(t.apiKey, tool, args);
      expect(response.error, JSON.stringify(response)).toBeDefined();
      expect(JSON.stringify(response.error), tool).toMatch(text);
    };
    await expectInvalid("memory_ingest", { conversation_id: "e", messages: [] }, /messages/);
    const many = Array.from({ length: 501 }, (_, i) => ({ role: "user", content: `turn ${i}` }));
    await expectInvalid("memory_ingest", { conversation_id: "e", messages: many }, /messages.*500|500.*messages/);
    await expectInvalid(
      "memory_ingest",
      { conversation_id: "e", messages: [{ role: "user", content: "x".repeat(100_001) }] },
      /content.*100000|100000|100,000/,
    );
    await expectInvalid(
      "memory_ingest",
      { conversation_id: "e", messages: [{ role: "user", content: "hello there", timestamp: "last Tuesdayish" }] },
      /timestamp/,
    );
    await expectInvalid("memory_profile", { subject: "Nobody" }, /No memories about 'Nobody'/);
    await expectInvalid("memory_history", {}, /exactly one of id, key, conversation_id or document_id/);
    await expectInvalid("memory_history", { id: "m", conversation_id: "c" }, /exactly one/);
    expect((await call(t.apiKey, "memory_list", {})).total).toBe(0);
  });
});
