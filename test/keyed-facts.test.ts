import { describe, expect, it } from "vitest";
import { call, callTool, newTenant, waitForEmbeddings } from "./helpers";

describe("keyed facts (memory_store key)", () => {
  it("a new value supersedes the old: search and context see only the latest, memory_get keeps the history", async () => {
    const t = await newTenant();
    const paris = await call(t.apiKey, "memory_store", {
      content: "The user lives in Paris",
      key: "user.city",
      namespace: "me",
    });
    expect(paris).toMatchObject({ key: "user.city", superseded: [], duplicate: false });
    const london = await call(t.apiKey, "memory_store", {
      content: "The user lives in London",
      key: "user.city",
      namespace: "me",
    });
    expect(london.superseded).toEqual([paris.id]);
    await waitForEmbeddings(t.tenantId);

    // Words the memories hold (a query mostly of words the project never used is answered with nothing).
    const hits = (await call(t.apiKey, "search", { query: "the user lives in", project: "me" })).results;
    expect(hits.map((h: any) => h.item_id)).toEqual([london.id]);
    const context = await call(t.apiKey, "memory_context_build", {
      query: "the user lives in",
      namespace: "me",
      token_budget: 500,
      use_cache: false,
      min_similarity: 0,
    });
    expect(context.memories.map((m: any) => m.id)).toEqual([london.id]);

    const current = await call(t.apiKey, "memory_get", { key: "user.city", namespace: "me", include_history: true });
    expect(current).toMatchObject({ id: london.id, key: "user.city", superseded_by: null, tier: "active" });
    expect(current.versions.map((v: any) => [v.content, v.superseded_by])).toEqual([
      ["The user lives in London", null],
      ["The user lives in Paris", london.id],
    ]);
    expect(await call(t.apiKey, "memory_get", { id: paris.id })).toMatchObject({
      tier: "superseded",
      superseded_by: london.id,
    });
    expect(await call(t.apiKey, "memory_get", { key: "user.city", namespace: "me" })).not.toHaveProperty("versions");
  });

  it("a fact may return to an earlier value; the same value again is a duplicate; unkeyed text and other namespaces are separate", async () => {
    const t = await newTenant();
    const store = (content: string, extra: Record<string, unknown> = {}) =>
      call(t.apiKey, "memory_store", { content, namespace: "me", ...extra });
    const first = await store("Prefers tea", { key: "drink" });
    const second = await store("Prefers coffee", { key: "drink" });
    const back = await store("Prefers tea", { key: "drink" });
    expect(back).toMatchObject({ duplicate: false, superseded: [second.id] });
    expect(back.id).not.toBe(first.id);
    expect(await store("Prefers tea", { key: "drink" })).toMatchObject({
      duplicate: true,
      duplicate_of: back.id,
      superseded: [],
    });
    expect(await store("Prefers tea")).toMatchObject({ duplicate: false, key: null, superseded: [] });
    const elsewhere = await call(t.apiKey, "memory_store", {
      content: "Prefers water",
      key: "drink",
      namespace: "work",
    });
    expect(elsewhere.superseded).toEqual([]);
    const history = await call(t.apiKey, "memory_get", { key: "drink", namespace: "me", include_history: true });
    expect(history.versions.map((v: any) => v.content)).toEqual(["Prefers tea", "Prefers coffee", "Prefers tea"]);
  });

  it("within one batch the last memory of a key wins; another tenant's key is untouched", async () => {
    const t = await newTenant();
    const other = await newTenant();
    const theirs = await call(other.apiKey, "memory_store", { content: "Timezone is UTC+9", key: "tz" });
    const batch = await call(t.apiKey, "memory_batch_store", {
      memories: [
        { content: "Timezone is UTC+1", key: "tz" },
        { content: "Timezone is UTC+2", key: "tz" },
      ],
    });
    expect(await call(t.apiKey, "memory_get", { key: "tz" })).toMatchObject({
      id: batch.ids[1],
      content: "Timezone is UTC+2",
    });
    expect((await call(t.apiKey, "memory_get", { id: batch.ids[0] })).superseded_by).toBe(batch.ids[1]);
    expect(await call(other.apiKey, "memory_get", { key: "tz" })).toMatchObject({ id: theirs.id, superseded_by: null });
  });

  it("memory_get names what is missing", async () => {
    const t = await newTenant();
    expect((await callTool(t.apiKey, "memory_get", {})).error).toMatchObject({
      message: "Give either id, or key (with namespace)",
      data: { details: { parameter: "id" } },
    });
    expect((await callTool(t.apiKey, "memory_get", { key: "never.stored" })).error).toMatchObject({
      data: { code: "NOT_FOUND", details: { parameter: "key" } },
    });
    expect((await callTool(t.apiKey, "memory_store", { content: "x", key: "   " })).error!.message).toContain("key");
  });
});
