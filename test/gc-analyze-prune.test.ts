import { describe, expect, it } from "vitest";
import { age, all, expectInvalid, itemSnapshot, one, store } from "./gc-fixtures";
import { call, callTool, newKey, newTenant, waitForEmbeddings } from "./helpers";

// Seed 004's garbage collection, through the real /jsonrpc route: scoring candidates, pruning (stash or
// delete) and pinning, which keeps a segment out of every collection path.

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
            "SELECT name AS tool, project, calls, errors FROM usage_hours WHERE tenant_id = ? AND name = 'context_gc_prune'",
            t.tenantId,
          ),
        { timeout: 10_000 },
      )
      .toEqual([{ tool: "context_gc_prune", project: "p", calls: 1, errors: 0 }]);
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
