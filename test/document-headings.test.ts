import { describe, expect, it } from "vitest";
import { call, newTenant, tenantDb } from "./helpers";

// A long Markdown document is cut into chunks; each keeps the headings it sits under as its context (indexed at the
// context's lower weight, and embedded with it), so a search naming the document and the section finds a chunk whose
// own text names neither. Through the tools, as a client stores and searches.

const steps = (topic: string) =>
  Array.from({ length: 40 }, (_, i) => `Step ${i}: ${topic}, then check the result before going on.`).join(" ");

const GUIDE = [
  "# Kestrel deploy guide",
  `This guide covers shipping the service. ${steps("build the image and push it")}`,
  "## Rollback",
  steps("point traffic at the previous release and drain the new pods"),
  "## Monitoring",
  steps("open the dashboards and watch the error rate"),
].join("\n\n");

describe("document headings", () => {
  it("a chunk deep in a section is found by its document's title and its section's heading", async () => {
    const t = await newTenant();
    const stored = await call(t.apiKey, "memory_store", { content: GUIDE, namespace: "docs" });
    // Another document that says "rollback" in its own words, about something else.
    await call(t.apiKey, "memory_store", {
      content: "Rollback of the database schema is not supported; restore a backup instead.",
      namespace: "docs",
    });
    // Unrelated notes, so that document frequencies mean something.
    await call(t.apiKey, "memory_batch_store", {
      namespace: "docs",
      memories: Array.from({ length: 30 }, (_, i) => ({
        content: `Garden note ${i}: water the plants and check the soil.`,
      })),
    });
    const db = await tenantDb(t.tenantId);
    const { results: chunks } = await db
      .prepare(
        "SELECT chunk_index, content, context FROM chunks WHERE tenant_id = ? AND item_id = ? ORDER BY chunk_index",
      )
      .bind(t.tenantId, stored.id)
      .all<{ chunk_index: number; content: string; context: string }>();
    expect(chunks.length).toBeGreaterThan(3);
    const draining = chunks.filter(
      (c) => c.content.includes("drain the new pods") && !/kestrel|rollback/i.test(c.content),
    );
    const drainingOnly = draining.filter((c) => !c.content.includes("watch the error rate"));
    expect(drainingOnly.length).toBeGreaterThan(0);
    for (const c of draining) expect(c.context).toContain("Kestrel deploy guide / Rollback");

    const found = await call(t.apiKey, "search", { query: "Kestrel rollback", project: "docs", limit: 20 });
    // A chunk of one section's words only (one spanning two sections sits under the first).
    const only = (content: string, words: string) =>
      content.includes(words) &&
      !/kestrel|rollback/i.test(content) &&
      ["drain the new pods", "watch the error rate", "push it"].every((w) => w === words || !content.includes(w));
    const ranks = (words: string) => found.results.flatMap((r: any, i: number) => (only(r.content, words) ? [i] : []));
    // Every chunk of the rollback section is found, though its text names neither the guide nor the section ...
    expect(ranks("drain the new pods").length).toBe(drainingOnly.length);
    // ... and ranks above the guide's other sections, which sit under the title alone.
    const monitoring = ranks("watch the error rate");
    expect(monitoring.length).toBeGreaterThan(0);
    expect(Math.max(...ranks("drain the new pods"))).toBeLessThan(Math.min(...monitoring));
  });
});
