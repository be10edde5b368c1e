import { describe, expect, it } from "vitest";
import { all, expectInvalid, ISO, itemSnapshot, one, store } from "./gc-fixtures";
import { call, callTool, mcpPost, newTenant } from "./helpers";

// Seed 004's tasks and snapshots through the real /jsonrpc route; then the toolset as a whole: its listing
// over MCP and tenant isolation across every tool.

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
