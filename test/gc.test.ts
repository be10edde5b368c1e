import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/crypto";
import { call, callTool, mcpPost, newKey, newTenant, type RpcResponse, tenantDb, waitForEmbeddings } from "./helpers";

// Seed 004's working set, GC, stash and task tools, through the real /jsonrpc route.

const HOUR = 3_600_000;

async function all<T = Record<string, unknown>>(db: D1Database, sql: string, ...params: unknown[]): Promise<T[]> {
  return (
    await db
      .prepare(sql)
      .bind(...params)
      .all<T>()
  ).results;
}

async function one<T = Record<string, unknown>>(db: D1Database, sql: string, ...params: unknown[]): Promise<T> {
  return (await db
    .prepare(sql)
    .bind(...params)
    .first<T>())!;
}

/** Makes segments look untouched (and created) `hours` ago: test setup for age-based scoring. */
async function age(db: D1Database, ids: string[], hours: number): Promise<void> {
  for (const id of ids)
    await db
      .prepare("UPDATE items SET touched_at = touched_at - ?, created_at = created_at - ? WHERE id = ?")
      .bind(hours * HOUR, hours * HOUR, id)
      .run();
}

async function store(
  apiKey: string,
  project: string,
  memories: { content: string; type?: string; tags?: string[] }[],
): Promise<string[]> {
  return (await call(apiKey, "memory_batch_store", { namespace: project, memories })).ids;
}

async function itemSnapshot(tenantId: string) {
  return all<{ id: string; tier: string; pinned: number; gc_survival_count: number; generation: string }>(
    await tenantDb(tenantId),
    "SELECT id, tier, pinned, gc_survival_count, generation FROM items WHERE tenant_id = ? ORDER BY id",
    tenantId,
  );
}

function expectInvalid(response: RpcResponse, parameter: string, message?: string | RegExp): void {
  expect(response.error, JSON.stringify(response)).toBeDefined();
  expect(response.error!.code).toBe(-32602);
  expect(response.error!.data).toMatchObject({ code: "INVALID_PARAMETER", details: { parameter } });
  if (message) expect(response.error!.message).toMatch(message);
}

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

describe("context_get_working_set", () => {
  it("answers the seed's shape with every stored item as a segment", async () => {
    const t = await newTenant();
    const [note, code] = await store(t.apiKey, "my-project", [
      { content: "Deploys go out on Tuesdays", tags: ["ops"] },
      { content: "function add(a, b) { return a + b; }", type: "code" },
    ]);
    const message = await call(t.apiKey, "log_chat", {
      conversation_id: "c1",
      role: "user",
      content: "please review the deploy plan",
      project_id: "my-project",
    });
    await store(t.apiKey, "elsewhere", [{ content: "not in this project" }]);
    await call(t.apiKey, "link_resources", { source_id: code, target_id: note, relationship_type: "references" });

    const result = await call(t.apiKey, "context_get_working_set", { project_id: "my-project" });
    expect(result.working_set).toEqual({
      project_id: "my-project",
      task_id: null,
      total_tokens: result.total_tokens,
      last_updated: ISO,
    });
    expect(result.segment_count).toBe(3);
    expect(result.truncated).toBe(false);
    const stored = await all<{ id: string; tokens: number }>(
      t.db,
      "SELECT id, tokens FROM items WHERE tenant_id = ? AND project = 'my-project'",
      t.tenantId,
    );
    expect(result.total_tokens).toBe(stored.reduce((s, r) => s + r.tokens, 0));
    expect(result.segments.map((s: any) => s.segment_id).sort()).toEqual([note, code, message.message_id].sort());
    const noteSegment = result.segments.find((s: any) => s.segment_id === note);
    expect(noteSegment).toEqual({
      segment_id: note,
      text: "Deploys go out on Tuesdays",
      type: "note",
      kind: "memory",
      project_id: "my-project",
      task_id: null,
      created_at: ISO,
      last_touched_at: ISO,
      pinned: false,
      generation: "young",
      gc_survival_count: 0,
      refcount: 1, // the code snippet references it
      file_path: null,
      line_range: null,
      tags: ["ops"],
      topic_id: null,
      tokens: stored.find((r) => r.id === note)!.tokens,
      tokens_computed_at: noteSegment.created_at,
      text_hash: await sha256Hex("Deploys go out on Tuesdays"),
      tier: "working",
    });
    expect(result.segments.find((s: any) => s.segment_id === code).refcount).toBe(0);
    expect(result.segments.find((s: any) => s.segment_id === message.message_id)).toMatchObject({
      type: "message",
      kind: "message",
      tier: "working",
    });
  });

  it("lists the most recently touched first, at most `limit`, with totals over all", async () => {
    const t = await newTenant();
    const ids = await store(
      t.apiKey,
      "p",
      Array.from({ length: 5 }, (_, i) => ({ content: `segment number ${i}` })),
    );
    for (let i = 0; i < ids.length; i++) await age(t.db, [ids[i]!], 10 - i); // ids[4] is the freshest
    const result = await call(t.apiKey, "context_get_working_set", { project_id: "p", limit: 2 });
    expect(result.segments.map((s: any) => s.segment_id)).toEqual([ids[4], ids[3]]);
    expect(result).toMatchObject({ segment_count: 5, truncated: true });
    const none = await call(t.apiKey, "context_get_working_set", { project_id: "p", limit: 0 });
    expect(none).toMatchObject({ segments: [], segment_count: 5, total_tokens: result.total_tokens });
    expect(none.working_set.last_updated).toBe(result.segments[0].last_touched_at);
  });

  it("counts links to an item's chunks (context links) in refcount", async () => {
    const t = await newTenant();
    const [target] = await store(t.apiKey, "p", [{ content: "The cache TTL is one hour" }]);
    const chunk = await one<{ id: number }>(t.db, "SELECT id FROM chunks WHERE item_id = ?", target);
    // seed 000's store_context_links: a message linked to a chunk
    await t.db
      .prepare(
        "INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES (?, ?, 'message', 'm1', 'chunk', ?, 'context', 1, 0)",
      )
      .bind("lnk_test_1", t.tenantId, String(chunk.id))
      .run();
    const result = await call(t.apiKey, "context_get_working_set", { project_id: "p" });
    expect(result.segments[0]).toMatchObject({ segment_id: target, refcount: 1 });
  });
});

describe("context_analyze_usage", () => {
  it("answers the seed example with metrics, a health score and no warnings when usage is low", async () => {
    const t = await newTenant();
    const [pinned] = await store(t.apiKey, "my-project", [
      { content: "Decision: we use Postgres for billing", type: "decision" },
      { content: "GET /health 200 in 3 ms", type: "log" },
      { content: "Remember to rotate the keys", type: "note" },
    ]);
    await call(t.apiKey, "context_gc_pin", { project_id: "my-project", segment_ids: [pinned] });
    const stored = await all<{ type: string; tokens: number }>(
      t.db,
      "SELECT type, tokens FROM items WHERE tenant_id = ?",
      t.tenantId,
    );
    const total = stored.reduce((s, r) => s + r.tokens, 0);
    const tokensOf = (type: string) => stored.find((r) => r.type === type)!.tokens;

    const result = await call(t.apiKey, "context_analyze_usage", { project_id: "my-project", token_limit: 1000000 });
    expect(result.usage_metrics).toEqual({
      total_tokens: total,
      total_segments: 3,
      tokens_by_type: { decision: tokensOf("decision"), log: tokensOf("log"), note: tokensOf("note") },
      segments_by_type: { decision: 1, log: 1, note: 1 },
      tokens_by_task: {},
      oldest_segment_age_hours: expect.any(Number),
      newest_segment_age_hours: expect.any(Number),
      pinned_segments_count: 1,
      pinned_tokens: tokensOf("decision"),
      usage_percent: Math.round((total / 1_000_000) * 100 * 100) / 100,
      estimated_remaining_tokens: 1_000_000 - total,
    });
    expect(result.usage_metrics.oldest_segment_age_hours).toBeLessThan(0.1);
    // the fresh log is the one candidate
    expect(result.impact_summary).toEqual({
      pruning_candidates_count: 1,
      estimated_tokens_freed: tokensOf("log"),
      estimated_usage_after_pruning: expect.any(Number),
    });
    expect(result.pruning_candidates_count).toBe(1);
    expect(result.warnings).toEqual([]);
    expect(result.recommendations[0]).toEqual({ priority: "low", message: "Context usage is healthy", action: null });
    expect(result.suggested_actions).toEqual([]);
    const f = result.health_score.factors;
    expect(f).toEqual({
      usage: expect.any(Number),
      distribution: Math.round((1 - tokensOf("log") / total) * 1000) / 1000,
      age: 1,
    });
    expect(f.usage).toBeGreaterThan(0.99);
    expect(result.health_score.score).toBe(
      Math.round(100 * (0.5 * f.usage + 0.25 * f.distribution + 0.25 * f.age) * 10) / 10,
    );
    expect(result.health_score.usage_percent).toBe(result.usage_metrics.usage_percent);
    expect(result).toMatchObject({ token_limit: 1_000_000, task_id: null, segments_ingested: 0 });
  });

  it("warns at 60, 80 and 90 percent and suggests calls to real tools", async () => {
    const t = await newTenant();
    await store(t.apiKey, "p", [{ content: "verbose tool output ".repeat(20), type: "log" }]);
    const tools = new Set((await call(t.apiKey, "list_tool_identifiers")).tools.map((x: any) => x.name ?? x));
    const at = async (current: number) =>
      call(t.apiKey, "context_analyze_usage", {
        project_id: "p",
        token_limit: 10_000,
        context_descriptors: { token_usage: { current, limit: 10_000 } },
      });
    const low = await at(5_900);
    expect(low.warnings).toEqual([]);
    const warning = await at(6_000);
    expect(warning.warnings).toEqual(["WARNING: context usage at 60% of 10000 tokens (threshold 60%)"]);
    expect(warning.recommendations[0]).toMatchObject({ priority: "medium", action: "context_gc_analyze" });
    expect(warning.suggested_actions).toEqual([
      {
        tool: "context_gc_analyze",
        description: expect.any(String),
        arguments: { project_id: "p", target_tokens: 1000 },
        estimated_tokens_freed: expect.any(Number),
      },
    ]);
    const high = await at(8_500);
    expect(high.warnings[0]).toMatch(/^HIGH: context usage at 85%/);
    expect(high.recommendations[0]).toMatchObject({ priority: "high", action: "context_stash" });
    const urgent = await at(9_500);
    expect(urgent.warnings).toHaveLength(1);
    expect(urgent.warnings[0]).toMatch(/^URGENT: context usage at 95%/);
    expect(urgent.recommendations[0]).toMatchObject({ priority: "urgent", action: "context_gc_prune" });
    const prune = urgent.suggested_actions.find((a: any) => a.tool === "context_gc_prune");
    expect(prune.arguments).toMatchObject({ project_id: "p", action: "stash", segment_ids: [expect.any(String)] });
    expect(urgent.health_score.factors.usage).toBeCloseTo(0.05, 3);
    expect(urgent.health_score.score).toBeLessThan(low.health_score.score);
    for (const r of [warning, high, urgent]) {
      for (const a of r.suggested_actions) expect(tools.has(a.tool), a.tool).toBe(true);
      for (const rec of r.recommendations) if (rec.action) expect(tools.has(rec.action), rec.action).toBe(true);
    }
    // token_usage.limit is the default token_limit
    const byDescriptor = await call(t.apiKey, "context_analyze_usage", {
      project_id: "p",
      context_descriptors: { token_usage: { current: 500, limit: 1000 } },
    });
    expect(byDescriptor).toMatchObject({ token_limit: 1000, usage_metrics: { usage_percent: 50 } });
  });

  it("ingests context descriptors (object or JSON string) as segments of the task", async () => {
    const t = await newTenant();
    const descriptors = {
      recent_messages: [{ role: "user", content: "Why does the login test fail?" }, "Because the token expired."],
      current_file: {
        path: "src/auth/login.ts",
        line: 42,
        content: "export function login() {\n  return check(token);\n}",
      },
      segment_summaries: [{ summary: "Earlier: we agreed to switch to JWT", type: "decision" }],
      task_info: { task_id: "task-auth", title: "Fix login" },
      platform_extra: { anything: true },
    };
    const result = await call(t.apiKey, "context_analyze_usage", {
      project_id: "app",
      context_descriptors: JSON.stringify(descriptors),
    });
    expect(result).toMatchObject({ segments_ingested: 4, task_id: "task-auth" });
    expect(result.usage_metrics).toMatchObject({
      total_segments: 4,
      segments_by_type: { message: 2, code: 1, decision: 1 },
      tokens_by_task: { "task-auth": result.usage_metrics.total_tokens },
    });
    // what is in context now is never a pruning candidate
    expect(result.pruning_candidates_count).toBe(0);
    const rows = await all<{
      kind: string;
      type: string;
      role: string | null;
      task_id: string;
      file_path: string | null;
      line_start: number | null;
    }>(
      t.db,
      "SELECT kind, type, role, task_id, file_path, line_start FROM items WHERE tenant_id = ? ORDER BY type, content",
      t.tenantId,
    );
    expect(rows).toEqual([
      {
        kind: "segment",
        type: "code",
        role: null,
        task_id: "task-auth",
        file_path: "src/auth/login.ts",
        line_start: 42,
      },
      { kind: "segment", type: "decision", role: null, task_id: "task-auth", file_path: null, line_start: null },
      { kind: "segment", type: "message", role: null, task_id: "task-auth", file_path: null, line_start: null },
      { kind: "segment", type: "message", role: "user", task_id: "task-auth", file_path: null, line_start: null },
    ]);
    const ws = await call(t.apiKey, "context_get_working_set", { project_id: "app", task_id: "task-auth" });
    expect(ws.segments.find((s: any) => s.type === "code")).toMatchObject({
      file_path: "src/auth/login.ts",
      line_range: [42, 42],
    });
    // the same descriptors again (as an object) store nothing twice
    const again = await call(t.apiKey, "context_analyze_usage", {
      project_id: "app",
      context_descriptors: descriptors,
    });
    expect(again).toMatchObject({ segments_ingested: 0, usage_metrics: { total_segments: 4 } });
  });

  it("rejects malformed descriptors naming the parameter, storing nothing", async () => {
    const t = await newTenant();
    expectInvalid(
      await callTool(t.apiKey, "context_analyze_usage", { project_id: "p", context_descriptors: "{not json" }),
      "context_descriptors",
      /^Invalid parameter 'context_descriptors': not valid JSON/,
    );
    expectInvalid(
      await callTool(t.apiKey, "context_analyze_usage", { project_id: "p", context_descriptors: "[1, 2]" }),
      "context_descriptors",
      /expected a JSON object/,
    );
    expectInvalid(
      await callTool(t.apiKey, "context_analyze_usage", {
        project_id: "p",
        context_descriptors: { recent_messages: [{ content: "fine" }, { role: "user" }] },
      }),
      "context_descriptors.recent_messages.1",
    );
    expectInvalid(
      await callTool(t.apiKey, "context_analyze_usage", {
        project_id: "p",
        context_descriptors: { recent_messages: [{ content: "ok", timestamp: "yesterday-ish" }] },
      }),
      "context_descriptors.recent_messages.0.timestamp",
    );
    expectInvalid(
      await callTool(t.apiKey, "context_analyze_usage", { token_limit: 5000 }),
      "project_id",
      "Invalid parameter 'project_id': is required (string)",
    );
    expect(await all(t.db, "SELECT id FROM items WHERE tenant_id = ?", t.tenantId)).toEqual([]);
  });
});

describe("context_gc_analyze", () => {
  it("scores candidates from age, refcount, type and generation; pinned never; a plan for target_tokens", async () => {
    const t = await newTenant();
    const [oldLog, oldNote, referenced, pinnedLog, freshNote, freshDecision] = await store(t.apiKey, "my-project", [
      // lexically disjoint, so the background auto-link job adds no similarity links between them
      { content: "compiler output: 120 files compiled in 3.2 seconds ".repeat(10), type: "log" },
      { content: "A note about the office coffee machine", type: "note" },
      { content: "Decision: the API is versioned by URL prefix", type: "decision" },
      { content: "webpack warning: bundle exceeds the size budget ".repeat(5), type: "log" },
      { content: "Standup moved to 9:30 tomorrow", type: "note" },
      { content: "Decision: ship on Friday", type: "decision" },
    ]);
    await age(t.db, [oldLog!, oldNote!, referenced!, pinnedLog!], 48);
    await call(t.apiKey, "link_resources", {
      source_id: freshNote,
      target_id: referenced,
      relationship_type: "references",
    });
    await call(t.apiKey, "link_resources", {
      source_id: freshDecision,
      target_id: referenced,
      relationship_type: "references",
    });
    await call(t.apiKey, "link_resources", {
      source_id: oldNote,
      target_id: referenced,
      relationship_type: "references",
    });
    await call(t.apiKey, "context_gc_pin", { project_id: "my-project", segment_ids: [pinnedLog] });

    const result = await call(t.apiKey, "context_gc_analyze", { project_id: "my-project", target_tokens: 10 });
    const ids = result.pruning_candidates.map((c: any) => c.segment_id);
    expect(ids).toEqual([oldLog, oldNote]); // highest score first
    const tokens = await all<{ id: string; tokens: number }>(
      t.db,
      "SELECT id, tokens FROM items WHERE tenant_id = ?",
      t.tenantId,
    );
    const tokensOf = (id: string) => tokens.find((r) => r.id === id)!.tokens;
    expect(result.pruning_candidates[0]).toEqual({
      segment_id: oldLog,
      score: expect.any(Number),
      tokens: tokensOf(oldLog!),
      reason: "old (48h since last touch) + no references + collectable type (log) + young, never survived a GC",
      segment_type: "log",
      age_hours: 48,
    });
    expect(result.pruning_candidates[0].score).toBeGreaterThan(result.pruning_candidates[1].score);
    expect(result.pruning_candidates[0].score).toBeLessThanOrEqual(1);
    expect(result).toMatchObject({
      total_candidates: 2,
      estimated_tokens_freed: tokensOf(oldLog!) + tokensOf(oldNote!),
      analyzed_segments: 6,
      task_id: null,
    });
    expect(result.pruning_plan).toEqual({
      candidates: [result.pruning_candidates[0]],
      total_tokens_freed: tokensOf(oldLog!),
      stash_segments: [oldLog],
      delete_segments: [],
      reason: `Plan to free ${tokensOf(oldLog!)} tokens (target 10) by stashing 1 segment(s), highest GC score first`,
    });
    const noPlan = await call(t.apiKey, "context_gc_analyze", { project_id: "my-project" });
    expect(noPlan.pruning_plan).toBeUndefined();
    const tooMuch = await call(t.apiKey, "context_gc_analyze", { project_id: "my-project", target_tokens: 1_000_000 });
    expect(tooMuch.pruning_plan.stash_segments).toEqual([oldLog, oldNote]);
    expect(tooMuch.pruning_plan.reason).toMatch(/^Partial plan: stashing all 2 candidate/);
  });

  it("advances survivors young -> old after two analyses; candidates do not survive", async () => {
    const t = await newTenant();
    const [garbage, keeper] = await store(t.apiKey, "p", [
      { content: "noisy debug output", type: "log" },
      { content: "Decision: keep the monorepo", type: "decision" },
    ]);
    const state = async () =>
      Object.fromEntries((await itemSnapshot(t.tenantId)).map((r) => [r.id, [r.generation, r.gc_survival_count]]));
    await call(t.apiKey, "context_gc_analyze", { project_id: "p" });
    expect(await state()).toEqual({ [garbage!]: ["young", 0], [keeper!]: ["young", 1] });
    await call(t.apiKey, "context_gc_analyze", { project_id: "p" });
    expect(await state()).toEqual({ [garbage!]: ["young", 0], [keeper!]: ["old", 2] });
    const ws = await call(t.apiKey, "context_get_working_set", { project_id: "p" });
    expect(ws.segments.find((s: any) => s.segment_id === keeper)).toMatchObject({
      generation: "old",
      gc_survival_count: 2,
    });
    // usage analysis looks without recording a cycle
    await call(t.apiKey, "context_analyze_usage", { project_id: "p" });
    expect((await state())[keeper!]).toEqual(["old", 2]);
  });

  it("treats what the descriptors say is in context as roots", async () => {
    const t = await newTenant();
    const [log] = await store(t.apiKey, "p", [{ content: "tail of the server log", type: "log" }]);
    const file = (
      await call(t.apiKey, "store_memory", {
        file_name: "src/server.ts",
        content: "server code ".repeat(5),
        project_id: "p",
        resource_type: "log",
      })
    ).resource_id as string;
    await age(t.db, [log!, file], 72);
    const before = await call(t.apiKey, "context_gc_analyze", { project_id: "p" });
    expect(before.pruning_candidates.map((c: any) => c.segment_id).sort()).toEqual([log, file].sort());
    const rooted = await call(t.apiKey, "context_gc_analyze", {
      project_id: "p",
      context_descriptors: {
        recent_messages: ["tail of the server log"],
        current_file: { path: "src/server.ts", line: 1 },
      },
    });
    expect(rooted.total_candidates).toBe(0);
  });
});

describe("context_gc_prune", () => {
  it("stashes (seed example), with per-segment errors for pinned, unknown and already stashed ids", async () => {
    const t = await newTenant();
    const [seg1, seg2, pinned] = await store(t.apiKey, "my-project", [
      { content: "apricot segment" },
      { content: "blueberry segment" },
      { content: "cherry segment" },
    ]);
    await call(t.apiKey, "context_gc_pin", { project_id: "my-project", segment_ids: [pinned] });
    const tokens = await all<{ id: string; tokens: number }>(
      t.db,
      "SELECT id, tokens FROM items WHERE tenant_id = ?",
      t.tenantId,
    );
    const result = await call(t.apiKey, "context_gc_prune", {
      project_id: "my-project",
      segment_ids: [seg1, seg2, pinned, "seg-missing"],
      action: "stash",
    });
    expect(result).toEqual({
      pruned_segments: [seg1, seg2],
      tokens_freed: tokens.filter((r) => r.id !== pinned).reduce((s, r) => s + r.tokens, 0),
      action: "stashed",
      errors: [
        {
          segment_id: pinned,
          code: "PERMISSION_DENIED",
          message: `Segment '${pinned}' is pinned and cannot be stashed; unpin it first (context_gc_unpin)`,
        },
        {
          segment_id: "seg-missing",
          code: "SEGMENT_NOT_FOUND",
          message: "Segment 'seg-missing' not found in project 'my-project'",
        },
      ],
    });
    const ws = await call(t.apiKey, "context_get_working_set", { project_id: "my-project" });
    expect(ws.segments.map((s: any) => s.segment_id)).toEqual([pinned]);
    // stashed segments leave default search, but are still there
    expect((await call(t.apiKey, "search", { query: "apricot", mode: "keyword" })).results).toEqual([]);
    expect(
      (await call(t.apiKey, "search", { query: "apricot", mode: "keyword", include_stashed: true })).results[0].item_id,
    ).toBe(seg1);
    const again = await call(t.apiKey, "context_gc_prune", {
      project_id: "my-project",
      segment_ids: [seg1],
      action: "stash",
    });
    expect(again).toEqual({
      pruned_segments: [],
      tokens_freed: 0,
      action: "stashed",
      errors: [{ segment_id: seg1, code: "INVALID_PARAMETER", message: `Segment '${seg1}' is already stashed` }],
    });
    // another project's segment is not found here
    const [other] = await store(t.apiKey, "other", [{ content: "other project" }]);
    const cross = await call(t.apiKey, "context_gc_prune", {
      project_id: "my-project",
      segment_ids: [other],
      action: "stash",
    });
    expect(cross.errors[0]).toMatchObject({ code: "SEGMENT_NOT_FOUND" });
  });

  it("refuses an unknown action and delete without confirm, changing nothing", async () => {
    const t = await newTenant();
    const [id] = await store(t.apiKey, "p", [{ content: "keep me" }]);
    const before = await itemSnapshot(t.tenantId);
    expectInvalid(
      await callTool(t.apiKey, "context_gc_prune", { project_id: "p", segment_ids: [id], action: "archive" }),
      "action",
      `Invalid parameter 'action': must be one of "stash", "delete" (got "archive")`,
    );
    expectInvalid(
      await callTool(t.apiKey, "context_gc_prune", { project_id: "p", segment_ids: [id], action: "delete" }),
      "confirm",
      /^Delete action requires confirm=true/,
    );
    expectInvalid(
      await callTool(t.apiKey, "context_gc_prune", {
        project_id: "p",
        segment_ids: [id],
        action: "delete",
        confirm: false,
      }),
      "confirm",
    );
    expectInvalid(
      await callTool(t.apiKey, "context_gc_prune", { project_id: "p", segment_ids: [], action: "stash" }),
      "segment_ids",
    );
    expect(await itemSnapshot(t.tenantId)).toEqual(before);
    expect(await one(t.db, "SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ?", t.tenantId)).toEqual({ n: 1 });
  });

  it("deletes with confirm, leaving no orphan chunk, FTS row, vector, link or cached context", async () => {
    const t = await newTenant();
    const paragraphs = Array.from(
      { length: 30 },
      (_, i) => `Paragraph ${i} of the zebra migration guide explains step ${i} in enough words to fill a chunk.`,
    );
    const doc = (
      await call(t.apiKey, "store_memory", { file_name: "zebra.md", content: paragraphs.join("\n\n"), project_id: "p" })
    ).resource_id as string;
    const [neighbour] = await store(t.apiKey, "p", [{ content: "The zebra migration is tracked in JIRA-7" }]);
    const message = (
      await call(t.apiKey, "log_chat", {
        conversation_id: "conv-z",
        role: "user",
        content: "what about zebra step 3?",
        project_id: "p",
      })
    ).message_id as string;
    await waitForEmbeddings(t.tenantId);
    await call(t.apiKey, "link_resources", { source_id: doc, target_id: neighbour, relationship_type: "related_to" });
    await call(t.apiKey, "link_resources", { source_id: neighbour, target_id: doc, relationship_type: "references" });
    const chunkIds = (await all<{ id: number }>(t.db, "SELECT id FROM chunks WHERE item_id = ?", doc)).map((c) => c.id);
    expect(chunkIds.length).toBeGreaterThan(1);
    await t.db
      .prepare(
        "INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES ('lnk_ctx', ?, 'message', ?, 'chunk', ?, 'context', 1, 0)",
      )
      .bind(t.tenantId, message, String(chunkIds[0]))
      .run();
    expect((await all(t.db, "SELECT chunk_id FROM local_vectors WHERE item_id = ?", doc)).length).toBe(chunkIds.length);
    const build = () =>
      call(t.apiKey, "memory_context_build", {
        query: "zebra migration step",
        token_budget: 4000,
        namespace: "p",
        min_similarity: 0,
      });
    expect((await build()).memories.map((m: any) => m.id)).toContain(doc);
    await new Promise((r) => setTimeout(r, 200)); // the cache write finishes after the response
    expect((await build()).cache_hit).toBe(true);

    const result = await call(t.apiKey, "context_gc_prune", {
      project_id: "p",
      segment_ids: [doc, message],
      action: "delete",
      confirm: true,
    });
    const tokens = await all<{ tokens: number }>(t.db, "SELECT tokens FROM items WHERE tenant_id = ?", t.tenantId);
    expect(result).toMatchObject({ pruned_segments: [doc, message], action: "deleted", errors: [] });
    expect(result.tokens_freed).toBeGreaterThan(100);
    expect(tokens).toHaveLength(1); // only the neighbour is left
    const inList = chunkIds.map(() => "?").join(",");
    expect(await all(t.db, `SELECT id FROM chunks WHERE item_id IN (?, ?)`, doc, message)).toEqual([]);
    expect(await all(t.db, `SELECT rowid FROM chunks_fts WHERE rowid IN (${inList})`, ...chunkIds)).toEqual([]);
    expect(
      await all(
        t.db,
        `SELECT chunk_id FROM local_vectors WHERE tenant_id = ? AND (item_id IN (?, ?) OR chunk_id IN (${inList}))`,
        t.tenantId,
        doc,
        message,
        ...chunkIds,
      ),
    ).toEqual([]);
    expect(await all(t.db, "SELECT id FROM links WHERE tenant_id = ?", t.tenantId)).toEqual([]);
    expect(
      await one(
        t.db,
        "SELECT message_count, tokens FROM conversations WHERE tenant_id = ? AND id = 'conv-z'",
        t.tenantId,
      ),
    ).toEqual({ message_count: 0, tokens: 0 });
    // every FTS row still belongs to a chunk (no orphan anywhere in the index)
    expect(await one(t.db, "SELECT COUNT(*) AS n FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks)")).toEqual({
      n: 0,
    });
    const after = await build();
    expect(after.cache_hit).toBe(false);
    expect(after.memories.map((m: any) => m.id)).toEqual([neighbour]);
    expect(
      (await call(t.apiKey, "search", { query: "zebra", include_stashed: true })).results.map((r: any) => r.item_id),
    ).toEqual([neighbour]);
    // recorded in the usage log
    await expect
      .poll(
        async () =>
          all(
            t.db,
            "SELECT tool, project, error_code FROM tool_calls WHERE tenant_id = ? AND tool = 'context_gc_prune'",
            t.tenantId,
          ),
        { timeout: 10_000 },
      )
      .toEqual([{ tool: "context_gc_prune", project: "p", error_code: null }]);
    // a deleted segment is gone for good
    const twice = await call(t.apiKey, "context_gc_prune", {
      project_id: "p",
      segment_ids: [doc],
      action: "delete",
      confirm: true,
    });
    expect(twice).toMatchObject({ pruned_segments: [], errors: [{ segment_id: doc, code: "SEGMENT_NOT_FOUND" }] });
  });

  it("needs a key with the write scope", async () => {
    const t = await newTenant();
    const [id] = await store(t.apiKey, "p", [{ content: "x marks the spot" }]);
    const reader = await newKey(t.tenantId, { scopes: ["read"] });
    const response = await callTool(reader.apiKey, "context_gc_prune", {
      project_id: "p",
      segment_ids: [id],
      action: "stash",
    });
    expect(response.error!.data).toMatchObject({ code: "PERMISSION_DENIED" });
    expect((await call(reader.apiKey, "context_get_working_set", { project_id: "p" })).segment_count).toBe(1);
  });
});

describe("context_gc_pin / context_gc_unpin", () => {
  it("pins (seed example) and reports unknown ids without changing anything", async () => {
    const t = await newTenant();
    const [seg1, seg2] = await store(t.apiKey, "my-project", [{ content: "one" }, { content: "two" }]);
    expect(await call(t.apiKey, "context_gc_pin", { project_id: "my-project", segment_ids: [seg1, seg2] })).toEqual({
      pinned_segments: [seg1, seg2],
      errors: [],
    });
    expect(await call(t.apiKey, "context_gc_pin", { project_id: "my-project", segment_ids: [seg1] })).toEqual({
      pinned_segments: [seg1],
      errors: [],
    });
    const before = await itemSnapshot(t.tenantId);
    expect(await call(t.apiKey, "context_gc_pin", { project_id: "my-project", segment_ids: ["nope"] })).toEqual({
      pinned_segments: [],
      errors: [
        { segment_id: "nope", code: "SEGMENT_NOT_FOUND", message: "Segment 'nope' not found in project 'my-project'" },
      ],
    });
    expect(await itemSnapshot(t.tenantId)).toEqual(before);
    expect(before.every((r) => r.pinned === 1)).toBe(true);
    expect(await call(t.apiKey, "context_gc_unpin", { project_id: "my-project", segment_ids: [seg1, "nope"] })).toEqual(
      {
        unpinned_segments: [seg1],
        errors: [
          {
            segment_id: "nope",
            code: "SEGMENT_NOT_FOUND",
            message: "Segment 'nope' not found in project 'my-project'",
          },
        ],
      },
    );
    const ws = await call(t.apiKey, "context_get_working_set", { project_id: "my-project" });
    expect(Object.fromEntries(ws.segments.map((s: any) => [s.segment_id, s.pinned]))).toEqual({
      [seg1!]: false,
      [seg2!]: true,
    });
  });

  it("keeps pinned segments through every path: analysis, prune, stash by filter, delete", async () => {
    const t = await newTenant();
    const [pinned, loose] = await store(t.apiKey, "p", [
      { content: "old pinned debug log", type: "log", tags: ["debug"] },
      { content: "old loose debug log", type: "log", tags: ["debug"] },
    ]);
    await age(t.db, [pinned!, loose!], 100);
    await call(t.apiKey, "context_gc_pin", { project_id: "p", segment_ids: [pinned] });
    const analysis = await call(t.apiKey, "context_gc_analyze", { project_id: "p", target_tokens: 1_000_000 });
    expect(analysis.pruning_candidates.map((c: any) => c.segment_id)).toEqual([loose]);
    expect(analysis.pruning_plan.stash_segments).toEqual([loose]);
    const deleted = await call(t.apiKey, "context_gc_prune", {
      project_id: "p",
      segment_ids: [pinned],
      action: "delete",
      confirm: true,
    });
    expect(deleted).toMatchObject({ pruned_segments: [], errors: [{ segment_id: pinned, code: "PERMISSION_DENIED" }] });
    const stashed = await call(t.apiKey, "context_stash", { project_id: "p", filters: { tags: ["debug"] } });
    expect(stashed).toMatchObject({
      stashed_segments: [loose],
      segments_matched: 2,
      errors: [{ segment_id: pinned, code: "PERMISSION_DENIED" }],
    });
    expect(await one(t.db, "SELECT tier, pinned FROM items WHERE id = ?", pinned)).toEqual({
      tier: "active",
      pinned: 1,
    });
    // once unpinned it is ordinary again
    await call(t.apiKey, "context_gc_unpin", { project_id: "p", segment_ids: [pinned] });
    expect(
      (await call(t.apiKey, "context_gc_analyze", { project_id: "p" })).pruning_candidates.map(
        (c: any) => c.segment_id,
      ),
    ).toEqual([pinned]);
  });
});

describe("context_stash / context_search_stashed / context_retrieve_stashed", () => {
  it("stashes by keyword and filters (seed example): every word must occur, filters AND-ed", async () => {
    const t = await newTenant();
    const [oldDocs, oldOther, newDocs, oldDocsCode] = await store(t.apiKey, "default", [
      { content: "The old documentation for the v1 API", type: "note" },
      { content: "An old recipe for bread", type: "note" },
      { content: "Documentation of the old v2 endpoints", type: "note" },
      { content: "// old documentation generator", type: "code" },
    ]);
    await t.db
      .prepare("UPDATE items SET created_at = ? WHERE id IN (?, ?, ?)")
      .bind(Date.parse("2023-06-01T00:00:00Z"), oldDocs, oldOther, oldDocsCode)
      .run();
    const tokens = await one<{ tokens: number }>(t.db, "SELECT tokens FROM items WHERE id = ?", oldDocs);
    const result = await call(t.apiKey, "context_stash", {
      query: "old documentation",
      filters: { type: "note", created_before: "2024-01-01T00:00:00Z" },
    });
    expect(result).toEqual({
      stashed_segments: [oldDocs],
      tokens_stashed: tokens.tokens,
      segments_matched: 1,
      errors: [],
    });
    const tiers = Object.fromEntries(
      (await all<{ id: string; tier: string }>(t.db, "SELECT id, tier FROM items WHERE tenant_id = ?", t.tenantId)).map(
        (r) => [r.id, r.tier],
      ),
    );
    expect(tiers).toEqual({
      [oldDocs!]: "stashed",
      [oldOther!]: "active",
      [newDocs!]: "active",
      [oldDocsCode!]: "active",
    });
    // filters as a JSON string; keyword is stemmed ("documentations" finds "documentation")
    const byString = await call(t.apiKey, "context_stash", {
      project_id: "default",
      query: "documentations",
      filters: JSON.stringify({ type: "code" }),
    });
    expect(byString.stashed_segments).toEqual([oldDocsCode]);
  });

  it("rejects malformed filters, unknown keys, unparseable dates and empty requests, changing nothing", async () => {
    const t = await newTenant();
    await store(t.apiKey, "default", [{ content: "some note" }]);
    const before = await itemSnapshot(t.tenantId);
    expectInvalid(
      await callTool(t.apiKey, "context_stash", { filters: "{type: note" }),
      "filters",
      /^Invalid parameter 'filters': not valid JSON/,
    );
    expectInvalid(
      await callTool(t.apiKey, "context_stash", { filters: { kind: "note" } }),
      "filters.kind",
      "Invalid parameter 'filters.kind': unknown parameter 'kind'; accepted parameters: file_path, task_id, tags, type, created_after, created_before",
    );
    expectInvalid(
      await callTool(t.apiKey, "context_stash", { filters: { created_before: "last tuesday" } }),
      "filters.created_before",
      /expected an ISO 8601 date .* \(got "last tuesday"\)/,
    );
    expectInvalid(
      await callTool(t.apiKey, "context_stash", { filters: { type: "poem" } }),
      "filters.type",
      /^Invalid parameter 'filters.type': must be one of/,
    );
    expectInvalid(await callTool(t.apiKey, "context_stash", { query: "   " }), "query", /Give a query or filters/);
    expectInvalid(await callTool(t.apiKey, "context_stash", { query: "?!" }), "query", /has no searchable words/);
    expectInvalid(
      await callTool(t.apiKey, "context_search_stashed", { filters: "[]" }),
      "filters",
      /expected a JSON object/,
    );
    expectInvalid(
      await callTool(t.apiKey, "context_retrieve_stashed", {
        filters: { created_after: "soon" },
        move_to_active: true,
      }),
      "filters.created_after",
    );
    expect(await itemSnapshot(t.tenantId)).toEqual(before);
    expect(before[0]!.tier).toBe("active");
  });

  it("round trip: stash -> search_stashed -> retrieve(move_to_active) -> working set again", async () => {
    const t = await newTenant();
    const [bug1, bug2, other] = await store(t.apiKey, "default", [
      { content: "Launch bugs: the signup button is hidden on mobile", tags: ["launch"] },
      { content: "Launch bug list item: emails are sent twice", tags: ["launch"] },
      { content: "Marketing plan for the launch week", tags: ["marketing"] },
    ]);
    await call(t.apiKey, "context_stash", { filters: { tags: ["launch", "marketing"] } });
    expect((await call(t.apiKey, "context_get_working_set", { project_id: "default" })).segment_count).toBe(0);

    const found = await call(t.apiKey, "context_search_stashed", {
      query: "launch bugs",
      filters: { tags: ["launch"] },
      limit: 20,
    });
    expect(found).toMatchObject({ total_matches: 2, query: "launch bugs", filters_applied: { tags: ["launch"] } });
    expect(found.segments.map((s: any) => s.segment_id).sort()).toEqual([bug1, bug2].sort());
    expect(found.segments[0]).toMatchObject({ tier: "stashed", project_id: "default" });
    const peek = await call(t.apiKey, "context_retrieve_stashed", { query: "launch bugs" });
    expect(peek.moved_to_active).toBeUndefined();
    expect(peek.segments_found).toBe(2);
    expect((await call(t.apiKey, "context_get_working_set", { project_id: "default" })).segment_count).toBe(0);

    const retrieved = await call(t.apiKey, "context_retrieve_stashed", {
      query: "launch bugs",
      move_to_active: true,
      limit: 1,
    });
    expect(retrieved.segments_found).toBe(2);
    expect(retrieved.retrieved_segments).toHaveLength(1);
    expect(retrieved.retrieved_segments[0].tier).toBe("working");
    expect(retrieved.moved_to_active.sort()).toEqual([bug1, bug2].sort()); // all matches move, not only the listed page
    const ws = await call(t.apiKey, "context_get_working_set", { project_id: "default" });
    expect(ws.segments.map((s: any) => s.segment_id).sort()).toEqual([bug1, bug2].sort());
    expect((await call(t.apiKey, "search", { query: "signup button", mode: "keyword" })).results[0].item_id).toBe(bug1);
    const rest = await call(t.apiKey, "context_search_stashed", {});
    expect(rest.segments.map((s: any) => s.segment_id)).toEqual([other]);
    expect(rest).toMatchObject({ query: null, filters_applied: {} });
  });

  it("searches by keyword and file_path (seed example); a relative path matches an absolute one", async () => {
    const t = await newTenant();
    const main = (
      await call(t.apiKey, "store_memory", {
        file_name: "/repo/src/main.py",
        content: "def main():\n    # entry function of the service",
        resource_type: "code",
      })
    ).resource_id;
    const util = (
      await call(t.apiKey, "store_memory", {
        file_name: "/repo/src/util.py",
        content: "def helper():\n    # a helper function",
        resource_type: "code",
      })
    ).resource_id;
    const other = (
      await call(t.apiKey, "store_memory", {
        file_name: "/repo/lib/src/main.py.bak",
        content: "old function backup",
        resource_type: "code",
      })
    ).resource_id;
    await call(t.apiKey, "context_stash", { filters: { type: "code" } });
    const result = await call(t.apiKey, "context_search_stashed", {
      query: "function",
      filters: { file_path: "src/main.py" },
      limit: 20,
    });
    expect(result).toMatchObject({
      total_matches: 1,
      query: "function",
      filters_applied: { file_path: "src/main.py" },
    });
    expect(result.segments.map((s: any) => s.segment_id)).toEqual([main]);
    expect(result.segments[0]).toMatchObject({ file_path: "/repo/src/main.py", type: "code", tier: "stashed" });
    expect((await call(t.apiKey, "context_search_stashed", { query: "function" })).total_matches).toBe(3);
    expect(
      (
        await call(t.apiKey, "context_search_stashed", { filters: JSON.stringify({ file_path: "/repo/src/util.py" }) })
      ).segments.map((s: any) => s.segment_id),
    ).toEqual([util]);
    expect(other).toBeDefined();
  });

  it("searches every readable project when project_id is omitted", async () => {
    const t = await newTenant();
    const [a] = await store(t.apiKey, "alpha", [{ content: "alpha roadmap draft" }]);
    const [b] = await store(t.apiKey, "beta", [{ content: "beta roadmap draft" }]);
    await call(t.apiKey, "context_gc_prune", { project_id: "alpha", segment_ids: [a], action: "stash" });
    await call(t.apiKey, "context_gc_prune", { project_id: "beta", segment_ids: [b], action: "stash" });
    const everywhere = await call(t.apiKey, "context_search_stashed", { query: "roadmap" });
    expect(everywhere.segments.map((s: any) => s.project_id).sort()).toEqual(["alpha", "beta"]);
    expect(
      (await call(t.apiKey, "context_search_stashed", { query: "roadmap", project_id: "beta" })).segments.map(
        (s: any) => s.segment_id,
      ),
    ).toEqual([b]);
    const limited = await newKey(t.tenantId, { projects: ["beta"] });
    expect(
      (await call(limited.apiKey, "context_search_stashed", { query: "roadmap" })).segments.map(
        (s: any) => s.segment_id,
      ),
    ).toEqual([b]);
    expect(
      (await callTool(limited.apiKey, "context_search_stashed", { project_id: "alpha" })).error!.data,
    ).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(
      (await callTool(limited.apiKey, "context_retrieve_stashed", { move_to_active: true })).error!.data,
    ).toMatchObject({ code: "PERMISSION_DENIED" }); // project 'default'
    expect(await call(limited.apiKey, "context_list_projects")).toEqual({ projects: ["beta"] });
  });
});

describe("context_list_projects", () => {
  it("lists the tenant's projects (seed example), active or stashed", async () => {
    const t = await newTenant();
    expect(await call(t.apiKey, "context_list_projects", {})).toEqual({ projects: [] });
    const [x] = await store(t.apiKey, "project2", [{ content: "x" }]);
    await store(t.apiKey, "project1", [{ content: "y" }]);
    await store(t.apiKey, "default", [{ content: "z" }]);
    await call(t.apiKey, "context_gc_prune", { project_id: "project2", segment_ids: [x], action: "stash" });
    expect(await call(t.apiKey, "context_list_projects", {})).toEqual({
      projects: ["default", "project1", "project2"],
    });
  });
});

describe("tasks", () => {
  it("sets the current task (seed example) and narrows the working set to it", async () => {
    const t = await newTenant();
    await call(t.apiKey, "context_analyze_usage", {
      project_id: "my-project",
      context_descriptors: { recent_messages: ["task 123 message"], task_info: { task_id: "task-123" } },
    });
    await call(t.apiKey, "context_analyze_usage", {
      project_id: "my-project",
      context_descriptors: { recent_messages: ["task 456 message"], task_info: { task_id: "task-456" } },
    });
    const [shared] = await store(t.apiKey, "my-project", [{ content: "a memory that belongs to no task" }]);
    expect((await call(t.apiKey, "context_get_working_set", { project_id: "my-project" })).segment_count).toBe(3);

    expect(await call(t.apiKey, "context_set_current_task", { project_id: "my-project", task_id: "task-456" })).toEqual(
      { project_id: "my-project", task_id: "task-456", previous_task_id: null },
    );
    expect(await call(t.apiKey, "context_set_current_task", { project_id: "my-project", task_id: "task-123" })).toEqual(
      { project_id: "my-project", task_id: "task-123", previous_task_id: "task-456" },
    );
    const ws = await call(t.apiKey, "context_get_working_set", { project_id: "my-project" });
    expect(ws.working_set.task_id).toBe("task-123");
    expect(ws.segments.map((s: any) => s.text).sort()).toEqual([
      "a memory that belongs to no task",
      "task 123 message",
    ]);
    expect(ws.segments.find((s: any) => s.segment_id === shared).task_id).toBeNull();
    // an explicit task_id wins over the current task
    expect(
      (await call(t.apiKey, "context_get_working_set", { project_id: "my-project", task_id: "task-456" })).segments
        .map((s: any) => s.text)
        .sort(),
    ).toEqual(["a memory that belongs to no task", "task 456 message"]);
    const usage = await call(t.apiKey, "context_analyze_usage", { project_id: "my-project" });
    expect(usage).toMatchObject({ task_id: "task-123", usage_metrics: { total_segments: 2 } });
    expect(await call(t.apiKey, "context_set_current_task", { project_id: "my-project", task_id: null })).toEqual({
      project_id: "my-project",
      task_id: null,
      previous_task_id: "task-123",
    });
    expect((await call(t.apiKey, "context_get_working_set", { project_id: "my-project" })).segment_count).toBe(3);
  });

  it("gets a task's segments from all tiers", async () => {
    const t = await newTenant();
    await call(t.apiKey, "context_analyze_usage", {
      project_id: "my-project",
      task_id: "task-123",
      context_descriptors: {
        recent_messages: ["first task message", "second task message"],
        segment_summaries: ["summary of the task so far"],
      },
    });
    await store(t.apiKey, "my-project", [{ content: "untasked memory" }]);
    const ws = await call(t.apiKey, "context_get_working_set", { project_id: "my-project", task_id: "task-123" });
    const first = ws.segments.find((s: any) => s.text === "first task message").segment_id;
    await call(t.apiKey, "context_gc_prune", { project_id: "my-project", segment_ids: [first], action: "stash" });

    const result = await call(t.apiKey, "context_get_task_context", { project_id: "my-project", task_id: "task-123" });
    expect(result).toMatchObject({ task_id: "task-123", segment_count: 3, truncated: false });
    expect(result.total_tokens).toBe(result.segments.reduce((s: number, x: any) => s + x.tokens, 0));
    expect(Object.fromEntries(result.segments.map((s: any) => [s.text, s.tier]))).toEqual({
      "first task message": "stashed",
      "second task message": "working",
      "summary of the task so far": "working",
    });
    expectInvalid(
      await callTool(t.apiKey, "context_get_task_context", { project_id: "my-project" }),
      "task_id",
      /no current task/,
    );
    await call(t.apiKey, "context_set_current_task", { project_id: "my-project", task_id: "task-123" });
    expect((await call(t.apiKey, "context_get_task_context", { project_id: "my-project" })).segment_count).toBe(3);
  });

  it("snapshots restore exactly the segments they captured, in one call", async () => {
    const t = await newTenant();
    await call(t.apiKey, "context_set_current_task", { project_id: "my-project", task_id: "task-123" });
    await call(t.apiKey, "context_analyze_usage", {
      project_id: "my-project",
      context_descriptors: {
        recent_messages: ["refactor the parser", "split lexer from parser"],
        current_file: { path: "src/parser.ts", content: "export function parse() {}" },
      },
    });
    const [shared] = await store(t.apiKey, "my-project", [{ content: "coding conventions: tabs" }]);
    await call(t.apiKey, "context_analyze_usage", {
      project_id: "my-project",
      task_id: "task-999",
      context_descriptors: { recent_messages: ["another task entirely"] },
    });
    const captured = (await call(t.apiKey, "context_get_working_set", { project_id: "my-project" })).segments
      .map((s: any) => s.segment_id)
      .sort();
    expect(captured).toHaveLength(4); // three of task-123 and the shared memory

    const snapshot = await call(t.apiKey, "context_create_task_snapshot", {
      project_id: "my-project",
      task_id: "task-123",
      name: "before-refactor",
    });
    const tokens = await one<{ n: number }>(
      t.db,
      `SELECT SUM(tokens) AS n FROM items WHERE id IN (${captured.map(() => "?").join(",")})`,
      ...captured,
    );
    expect(snapshot).toEqual({
      snapshot_id: expect.stringMatching(/^snapshot-/),
      task_id: "task-123",
      name: "before-refactor",
      segments_snapshot: 4,
      tokens_snapshot: tokens.n,
      created_at: ISO,
    });

    // the snapshot's listing may get auto-linked to what it captured: such links do not keep segments alive
    const record = await one<{ id: string }>(
      t.db,
      "SELECT id FROM items WHERE tenant_id = ? AND kind = 'snapshot'",
      t.tenantId,
    );
    await t.db
      .prepare(
        "INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES ('lnk_snap', ?, 'item', ?, 'item', ?, 'similar_content', 0.9, 0)",
      )
      .bind(t.tenantId, record.id, shared)
      .run();
    const refcounts = (await call(t.apiKey, "context_get_working_set", { project_id: "my-project" })).segments.map(
      (s: any) => s.refcount,
    );
    expect(refcounts).toEqual([0, 0, 0, 0]);

    // after the snapshot: a new segment, then everything is stashed
    const later = (
      await call(t.apiKey, "context_analyze_usage", {
        project_id: "my-project",
        context_descriptors: { recent_messages: ["written after the snapshot"] },
      })
    ).segments_ingested;
    expect(later).toBe(1);
    const everything = await call(t.apiKey, "context_stash", {
      project_id: "my-project",
      filters: { created_before: new Date(Date.now() + 60_000).toISOString() },
    });
    expect(everything.stashed_segments).toHaveLength(6);
    expect(
      (await call(t.apiKey, "context_get_working_set", { project_id: "my-project", task_id: "task-999" }))
        .segment_count,
    ).toBe(0);

    // the snapshot is a stashed record, found by name and tag
    const records = await call(t.apiKey, "context_search_stashed", {
      project_id: "my-project",
      query: "before-refactor",
      filters: { type: "snapshot" },
    });
    expect(records.total_matches).toBe(1);
    expect(records.segments[0]).toMatchObject({
      type: "snapshot",
      kind: "snapshot",
      task_id: "task-123",
      tier: "stashed",
    });
    expect(records.segments[0].tags).toEqual(["snapshot", `snapshot:${snapshot.snapshot_id}`, "task:task-123"]);
    expect(records.segments[0].text).toContain("4 segment(s)");
    expect(records.segments[0].text).toContain("- [message] refactor the parser");

    const restored = await call(t.apiKey, "context_retrieve_stashed", {
      project_id: "my-project",
      filters: { tags: [`snapshot:${snapshot.snapshot_id}`] },
      move_to_active: true,
    });
    expect(restored.segments_found).toBe(4);
    expect(restored.moved_to_active.sort()).toEqual(captured);
    const active = await all<{ id: string }>(
      t.db,
      "SELECT id FROM items WHERE tenant_id = ? AND tier = 'active' ORDER BY id",
      t.tenantId,
    );
    expect(active.map((r) => r.id)).toEqual(captured);
    expect(captured).toContain(shared);
    // the record stays in the stash, so the snapshot can be restored again
    expect((await call(t.apiKey, "context_search_stashed", { filters: { tags: ["snapshot"] } })).total_matches).toBe(1);
  });
});

describe("over MCP", () => {
  it("lists the 13 tools in the gc toolset (not in core) with honest annotations, and calls them", async () => {
    const t = await newTenant();
    const list = async (query: string) =>
      (
        await (
          await mcpPost(
            t.apiKey,
            { jsonrpc: "2.0", id: 1, method: "tools/list" },
            { query, accept: "application/json" },
          )
        ).json<any>()
      ).result.tools;
    const gc = await list("?toolsets=gc");
    expect(gc.map((x: any) => x.name).sort()).toEqual(
      [
        "context_analyze_usage",
        "context_get_working_set",
        "context_gc_analyze",
        "context_gc_prune",
        "context_gc_pin",
        "context_gc_unpin",
        "context_stash",
        "context_search_stashed",
        "context_retrieve_stashed",
        "context_list_projects",
        "context_set_current_task",
        "context_get_task_context",
        "context_create_task_snapshot",
      ].sort(),
    );
    expect((await list("")).some((x: any) => x.name.startsWith("context_gc"))).toBe(false);
    const byName = new Map(gc.map((x: any) => [x.name, x.annotations]));
    expect(byName.get("context_gc_prune")).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get("context_get_working_set")).toMatchObject({ readOnlyHint: true });
    expect(byName.get("context_search_stashed")).toMatchObject({ readOnlyHint: true });
    expect(byName.get("context_stash")).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    const response = await mcpPost(
      t.apiKey,
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "context_gc_prune", arguments: { project_id: "p", segment_ids: ["x"], action: "delete" } },
      },
      { query: "?toolsets=gc", accept: "application/json" },
    );
    const result = (await response.json<any>()).result;
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0].text).error).toMatchObject({
      code: "INVALID_PARAMETER",
      details: { parameter: "confirm" },
    });
  });
});

describe("tenant isolation", () => {
  it("never shows, pins, prunes or retrieves another tenant's segments", async () => {
    const a = await newTenant();
    const b = await newTenant();
    const [secret, stashedSecret] = await store(a.apiKey, "shared-name", [
      { content: "tenant A secret plan" },
      { content: "tenant A stashed secret" },
    ]);
    await call(a.apiKey, "context_gc_prune", {
      project_id: "shared-name",
      segment_ids: [stashedSecret],
      action: "stash",
    });
    await call(a.apiKey, "context_set_current_task", { project_id: "shared-name", task_id: "a-task" });

    expect((await call(b.apiKey, "context_get_working_set", { project_id: "shared-name" })).segment_count).toBe(0);
    expect(
      (await call(b.apiKey, "context_get_working_set", { project_id: "shared-name" })).working_set.task_id,
    ).toBeNull();
    expect(await call(b.apiKey, "context_list_projects")).toEqual({ projects: [] });
    expect((await call(b.apiKey, "context_search_stashed", { query: "secret" })).total_matches).toBe(0);
    expect(
      (
        await call(b.apiKey, "context_retrieve_stashed", {
          project_id: "shared-name",
          query: "secret",
          move_to_active: true,
        })
      ).segments_found,
    ).toBe(0);
    expect(
      (await call(b.apiKey, "context_gc_pin", { project_id: "shared-name", segment_ids: [secret] })).errors[0].code,
    ).toBe("SEGMENT_NOT_FOUND");
    expect(
      (
        await call(b.apiKey, "context_gc_prune", {
          project_id: "shared-name",
          segment_ids: [secret],
          action: "delete",
          confirm: true,
        })
      ).errors[0].code,
    ).toBe("SEGMENT_NOT_FOUND");
    expect(
      (await call(b.apiKey, "context_stash", { project_id: "shared-name", query: "secret" })).segments_matched,
    ).toBe(0);
    const snapshot = await call(b.apiKey, "context_create_task_snapshot", { project_id: "shared-name" });
    expect(snapshot).toMatchObject({ task_id: null, segments_snapshot: 0, tokens_snapshot: 0 });
    expect(await itemSnapshot(a.tenantId)).toEqual([
      ...[
        { id: secret!, tier: "active", pinned: 0, gc_survival_count: 0, generation: "young" },
        { id: stashedSecret!, tier: "stashed", pinned: 0, gc_survival_count: 0, generation: "young" },
      ].sort((x, y) => (x.id < y.id ? -1 : 1)),
    ]);
  });
});
