import { describe, expect, it } from "vitest";
import { admin, call, newTenant, untilProjectsDeleted } from "./helpers";

// A write bumps only its own project's generation; a cross-project context's is the sum of the tenant's
// (src/core/context/cache-generation.ts). These check that the sum invalidates as the per-project rows do, and that a
// project's deletion never lets it return to a value a context was cached under.

const build = (apiKey: string) =>
  call(apiKey, "memory_context_build", { query: "when is the launch", token_budget: 800 });

describe("cross-project cached contexts", () => {
  it("are served until a write to any project, then rebuilt", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { namespace: "alpha", content: "The alpha launch is on March 3" });
    await call(t.apiKey, "memory_store", { namespace: "beta", content: "The beta launch is in May" });
    expect((await build(t.apiKey)).cache_hit).toBe(false);
    await expect.poll(async () => (await call(t.apiKey, "memory_cache_stats")).size).toBe(1);
    expect((await build(t.apiKey)).cache_hit).toBe(true);
    await call(t.apiKey, "memory_store", { namespace: "beta", content: "The beta launch party is in June" });
    const rebuilt = await build(t.apiKey);
    expect(rebuilt.cache_hit).toBe(false);
    expect(JSON.stringify(rebuilt)).toContain("June");
  });

  it("are never served from before a project's deletion, even once later writes bring the count back", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { namespace: "alpha", content: "The alpha launch is on March 3" });
    await call(t.apiKey, "memory_store", { namespace: "beta", content: "The beta launch is in May" });
    expect(JSON.stringify(await build(t.apiKey))).toContain("March 3");
    const cached = async () =>
      t.db.prepare("SELECT * FROM cache_entries WHERE tenant_id = ? AND project = '*'").bind(t.tenantId).first();
    await expect.poll(cached).not.toBeNull();
    const entry = (await cached()) as Record<string, unknown>;

    expect((await admin("DELETE", `/tenants/${t.tenantId}/projects/alpha`)).status).toBe(202);
    await untilProjectsDeleted(t);
    // A context built while the deletion ran, stored after it had cleared the cache: it still quotes alpha.
    const columns = Object.keys(entry);
    await t.db
      .prepare(`INSERT INTO cache_entries (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`)
      .bind(...columns.map((c) => entry[c]))
      .run();
    // As many writes to beta as alpha's generation held: a sum that lost alpha's count would be back where it was.
    await call(t.apiKey, "memory_store", { namespace: "beta", content: "The beta launch venue is Lisbon" });
    const after = await build(t.apiKey);
    expect(after.cache_hit).toBe(false);
    expect(JSON.stringify(after)).not.toContain("March 3");
  });
});
