import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/crypto";
import { age, all, expectInvalid, ISO, one, store } from "./gc-fixtures";
import { call, callTool, newTenant } from "./helpers";

// Seed 004's view of what is in context, through the real /jsonrpc route: the working set, usage analysis
// (with the context descriptors it ingests) and the project list.

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
