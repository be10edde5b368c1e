import { describe, expect, it } from "vitest";
import { all, expectInvalid, itemSnapshot, one, store } from "./gc-fixtures";
import { call, callTool, newKey, newTenant } from "./helpers";

// Seed 004's stash, through the real /jsonrpc route: stashing by keyword and filters, searching the stash and
// retrieving from it.

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
