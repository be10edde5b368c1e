import { describe, expect, it } from "vitest";
import { noUnits } from "../src/billable-units";
import { addHourRows, hourRows } from "../src/core/tenants/usage-hours";
import { admin, call, callTool, newKey, newTenant, request, waitForEmbeddings } from "./helpers";

// The tools the dashboard reads and corrects memory with, through the real /jsonrpc route.

describe("whoami", () => {
  it("tells a key its tenant, scopes and projects", async () => {
    const t = await newTenant();
    const limited = await newKey(t.tenantId, { scopes: ["read"], projects: ["web"] });
    expect(await call(limited.apiKey, "whoami")).toEqual({
      tenant_id: t.tenantId,
      key_id: limited.keyId,
      scopes: ["read"],
      projects: ["web"],
    });
    expect(await call(t.apiKey, "whoami")).toMatchObject({
      tenant_id: t.tenantId,
      key_id: t.keyId,
      scopes: ["read", "write"],
      projects: null,
    });
  });
});

describe("memory_list", () => {
  it("lists newest first with project, type, tag, date and tier filters, paged, within the key's projects", async () => {
    const t = await newTenant();
    const long = "A long design note. ".repeat(40);
    const web = await call(t.apiKey, "memory_batch_store", {
      namespace: "web",
      memories: [
        { content: "web note one", tags: ["a"] },
        { content: "web decision two", type: "decision", tags: ["b"] },
        { content: long, tags: ["a", "c"] },
      ],
    });
    await call(t.apiKey, "memory_store", { content: "api note", namespace: "api", tags: ["a"] });
    await t.db
      .prepare("UPDATE items SET created_at = ? WHERE id = ?")
      .bind(Date.parse("2024-01-15T10:00:00Z"), web.ids[0])
      .run();

    const all = await call(t.apiKey, "memory_list", {});
    expect(all.total).toBe(4);
    expect(all.memories[all.memories.length - 1].id).toBe(web.ids[0]); // oldest last
    const longRow = all.memories.find((m: any) => m.id === web.ids[2]);
    expect(longRow).toMatchObject({
      preview: long.slice(0, 300),
      truncated: true,
      tags: ["a", "c"],
      importance: 0.5,
      tier: "active",
      pinned: false,
      project: "web",
    });

    expect(
      (await call(t.apiKey, "memory_list", { project: "web", tags: ["a"] })).memories.map((m: any) => m.id).sort(),
    ).toEqual([web.ids[0], web.ids[2]].sort());
    expect((await call(t.apiKey, "memory_list", { types: ["decision"] })).memories.map((m: any) => m.id)).toEqual([
      web.ids[1],
    ]);
    expect((await call(t.apiKey, "memory_list", { before: "2024-12-31" })).memories.map((m: any) => m.id)).toEqual([
      web.ids[0],
    ]);
    const page = await call(t.apiKey, "memory_list", { limit: 2, offset: 2 });
    expect(page).toMatchObject({ total: 4, offset: 2, limit: 2 });
    expect(page.memories.map((m: any) => m.id)).toEqual(all.memories.slice(2).map((m: any) => m.id));

    await call(t.apiKey, "context_gc_prune", { project_id: "web", segment_ids: [web.ids[1]], action: "stash" });
    expect((await call(t.apiKey, "memory_list", { project: "web" })).total).toBe(2);
    expect((await call(t.apiKey, "memory_list", { project: "web", include_stashed: true })).total).toBe(3);

    const apiOnly = await newKey(t.tenantId, { scopes: ["read"], projects: ["api"] });
    expect((await call(apiOnly.apiKey, "memory_list", {})).memories.map((m: any) => m.content ?? m.preview)).toEqual([
      "api note",
    ]);
    expect((await callTool(apiOnly.apiKey, "memory_list", { project: "web" })).error?.data.code).toBe(
      "PERMISSION_DENIED",
    );
  });
});

describe("memory_get", () => {
  it("returns one item whole with links both ways and its history; NOT_FOUND outside the scope", async () => {
    const t = await newTenant();
    const [a, b, c] = (
      await call(t.apiKey, "memory_batch_store", {
        namespace: "web",
        memories: [{ content: "alpha fact" }, { content: "beta fact" }, { content: "gamma fact" }],
      })
    ).ids;
    const other = await call(t.apiKey, "memory_store", { content: "delta in another project", namespace: "api" });
    await call(t.apiKey, "link_resources", {
      source_id: a,
      target_id: b,
      relationship_type: "references",
      weight: 0.6,
    });
    await call(t.apiKey, "link_resources", { source_id: c, target_id: a, relationship_type: "supersedes" });
    await call(t.apiKey, "link_resources", { source_id: a, target_id: other.id, relationship_type: "related_to" });
    await waitForEmbeddings(t.tenantId);
    const chunk = (await call(t.apiKey, "search", { query: "gamma", mode: "keyword" })).results[0].chunk_id;
    const message = await call(t.apiKey, "log_chat", {
      conversation_id: "s1",
      role: "assistant",
      content: "alpha is true",
      project_id: "web",
    });
    await call(t.apiKey, "store_context_links", { message_id: message.message_id, chunk_ids: [chunk] });

    const item = await call(t.apiKey, "memory_get", { id: a });
    expect(item).toMatchObject({
      id: a,
      project: "web",
      kind: "memory",
      type: "note",
      content: "alpha fact",
      tags: [],
      importance: 0.5,
      chunk_count: 1,
      tier: "active",
    });
    expect(item.history.embedded_at).toEqual(expect.any(String));
    const links = item.links.map((l: any) => [l.direction, l.relationship_type, l.other_id]).sort();
    expect(links).toEqual(
      [
        ["incoming", "supersedes", c],
        ["outgoing", "references", b],
        ["outgoing", "related_to", other.id],
      ].sort(),
    );
    expect(item.links.find((l: any) => l.other_id === b)).toMatchObject({
      weight: 0.6,
      other_preview: "beta fact",
      other_kind: "memory",
    });
    // Context links: the message points at gamma's chunk, so each lists the other.
    expect((await call(t.apiKey, "memory_get", { id: c })).links).toContainEqual(
      expect.objectContaining({ direction: "incoming", relationship_type: "context", other_id: message.message_id }),
    );
    expect((await call(t.apiKey, "memory_get", { id: message.message_id })).links).toEqual([
      expect.objectContaining({ direction: "outgoing", other_id: c, other_preview: "gamma fact" }),
    ]);

    const webOnly = await newKey(t.tenantId, { scopes: ["read"], projects: ["web"] });
    expect((await call(webOnly.apiKey, "memory_get", { id: a })).links.map((l: any) => l.other_id)).not.toContain(
      other.id,
    );
    expect((await callTool(webOnly.apiKey, "memory_get", { id: other.id })).error?.data.code).toBe("NOT_FOUND");
    const stranger = await newTenant();
    expect((await callTool(stranger.apiKey, "memory_get", { id: a })).error?.data.code).toBe("NOT_FOUND");
  });
});

describe("memory_update", () => {
  it("replaces tags and importance; the new tags are indexed and embedded again, the statistics stay exact", async () => {
    const t = await newTenant();
    const doc = await call(t.apiKey, "store_memory", {
      file_name: "runbook.md",
      content: "Restart the ingest workers with the blue button.",
      tags: ["ops"],
    });
    await waitForEmbeddings(t.tenantId);
    const found = async (query: string) =>
      (await call(t.apiKey, "search", { query, mode: "keyword" })).results.map((r: any) => r.item_id);
    expect(await found("ops")).toEqual([doc.resource_id]);

    const updated = await call(t.apiKey, "memory_update", {
      id: doc.resource_id,
      tags: ["oncall", "pager", "oncall"],
      importance: 0.9,
    });
    expect(updated).toEqual({
      success: true,
      id: doc.resource_id,
      project: "default",
      tags: ["oncall", "pager"],
      importance: 0.9,
      reindexed_chunks: 1,
    });
    expect(await found("pager")).toEqual([doc.resource_id]);
    expect(await found("ops")).toEqual([]);
    const item = await call(t.apiKey, "memory_get", { id: doc.resource_id });
    expect(item).toMatchObject({ tags: ["oncall", "pager"], importance: 0.9 });
    const stats = await t.db
      .prepare("SELECT tokens, chunks FROM keyword_stats WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ tokens: number; chunks: number }>();
    const actual = await t.db
      .prepare("SELECT SUM(fts_tokens) AS tokens, COUNT(*) AS chunks FROM chunks WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ tokens: number; chunks: number }>();
    expect(stats).toEqual(actual);
    await waitForEmbeddings(t.tenantId); // re-embedded with the new context
    expect((await call(t.apiKey, "memory_update", { id: doc.resource_id, importance: 0.2 })).tags).toEqual([
      "oncall",
      "pager",
    ]);

    const message = await call(t.apiKey, "log_chat", { conversation_id: "c1", role: "user", content: "hello there" });
    expect(
      (await call(t.apiKey, "memory_update", { id: message.message_id, tags: ["greeting"] })).reindexed_chunks,
    ).toBe(0);

    expect((await callTool(t.apiKey, "memory_update", { id: doc.resource_id })).error?.data.code).toBe(
      "INVALID_PARAMETER",
    );
    const reader = await newKey(t.tenantId, { scopes: ["read"] });
    expect((await callTool(reader.apiKey, "memory_update", { id: doc.resource_id, tags: [] })).error?.data.code).toBe(
      "PERMISSION_DENIED",
    );
    const otherProject = await newKey(t.tenantId, { scopes: ["write"], projects: ["elsewhere"] });
    expect(
      (await callTool(otherProject.apiKey, "memory_update", { id: doc.resource_id, tags: [] })).error?.data.code,
    ).toBe("NOT_FOUND");
  });
});

describe("get_knowledge_graph", () => {
  it("returns linked items and conversations with degrees, filtered by type, project and size", async () => {
    const t = await newTenant();
    const [a, b, c, lone] = (
      await call(t.apiKey, "memory_batch_store", {
        namespace: "web",
        memories: ["hub", "spoke one", "spoke two", "alone"].map((content) => ({ content })),
      })
    ).ids;
    const api = await call(t.apiKey, "memory_store", { content: "api side", namespace: "api" });
    await call(t.apiKey, "link_resources", { source_id: b, target_id: a, relationship_type: "references" });
    await call(t.apiKey, "link_resources", { source_id: c, target_id: a, relationship_type: "depends_on" });
    await call(t.apiKey, "link_resources", { source_id: a, target_id: api.id, relationship_type: "references" });
    await call(t.apiKey, "add_message", { contextId: "x", message: "first", role: "user" });
    await call(t.apiKey, "add_message", { contextId: "y", message: "second", role: "user" });
    await call(t.apiKey, "add_relationship", {
      sourceContextId: "x",
      targetContextId: "y",
      relationshipType: "continues",
    });

    const graph = await call(t.apiKey, "get_knowledge_graph", {});
    expect(graph).toMatchObject({ total_nodes: 6, total_edges: 4, truncated: false });
    expect(graph.nodes[0]).toMatchObject({
      id: a,
      node_type: "item",
      project: "web",
      kind: "memory",
      label: "hub",
      degree: 3,
    });
    expect(graph.nodes.map((n: any) => n.id)).not.toContain(lone);
    expect(
      graph.nodes
        .filter((n: any) => n.node_type === "conversation")
        .map((n: any) => n.id)
        .sort(),
    ).toEqual(["x", "y"]);
    expect(graph.edges).toContainEqual({
      source: "x",
      source_type: "conversation",
      target: "y",
      target_type: "conversation",
      relationship_type: "continues",
      weight: 0.8,
    });

    const refs = await call(t.apiKey, "get_knowledge_graph", { relationship_types: ["references"] });
    expect(refs.edges.map((e: any) => e.source).sort()).toEqual([a, b].sort());
    const web = await call(t.apiKey, "get_knowledge_graph", { project: "web" });
    expect(web.nodes.map((n: any) => n.id).sort()).toEqual([a, b, c].sort()); // the link to api and the default-project conversations are out
    const top = await call(t.apiKey, "get_knowledge_graph", { max_nodes: 2 });
    expect(top).toMatchObject({ total_nodes: 6, truncated: true });
    expect(top.nodes.map((n: any) => n.id)).toContain(a);
    for (const e of top.edges)
      expect(top.nodes.map((n: any) => n.id)).toEqual(expect.arrayContaining([e.source, e.target]));

    const apiOnly = await newKey(t.tenantId, { scopes: ["read"], projects: ["api"] });
    expect(await call(apiOnly.apiKey, "get_knowledge_graph", {})).toMatchObject({
      nodes: [],
      edges: [],
      total_nodes: 0,
    });
  });

  it("counts a context link as a link to the chunk's item", async () => {
    const t = await newTenant();
    const doc = await call(t.apiKey, "store_memory", {
      file_name: "auth.md",
      content: "JWT tokens expire after one hour.",
    });
    await waitForEmbeddings(t.tenantId);
    const chunk = (await call(t.apiKey, "search", { query: "JWT", mode: "keyword" })).results[0].chunk_id;
    const message = await call(t.apiKey, "log_chat", {
      conversation_id: "s",
      role: "assistant",
      content: "They expire hourly.",
    });
    await call(t.apiKey, "store_context_links", { message_id: message.message_id, chunk_ids: [chunk] });
    const graph = await call(t.apiKey, "get_knowledge_graph", { relationship_types: ["context"] });
    expect(graph.edges).toEqual([
      {
        source: message.message_id,
        source_type: "item",
        target: doc.resource_id,
        target_type: "item",
        relationship_type: "context",
        weight: expect.any(Number),
      },
    ]);
  });
});

describe("get_usage_report", () => {
  it("buckets calls per tool, gives nearest-rank p50/p95 and storage per project, within the key's projects", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_store", { content: "stored in web", namespace: "web" });
    const now = Date.now();
    // A minute ago, but inside the current hour's bucket (a run in an hour's first minute put them in the one before).
    const recent = now - Math.min(60_000, now % 3_600_000);
    // Straight into the hourly aggregates, as the usage log sums calls (durations 1..20 ms, one failed).
    const entry = (name: string, project: string | null, at: number, durationMs: number, failed = false) => ({
      tenantId: t.tenantId,
      at,
      source: "tool" as const,
      name,
      project,
      failed,
      units: { ...noUnits(), d1RoundTrips: 1, d1Ms: 0.5 },
      durationMs,
    });
    await addHourRows(
      t.db,
      hourRows([
        ...Array.from({ length: 20 }, (_, i) => entry("search", "web", recent, i + 1, i === 0)),
        entry("ping", null, now - 3 * 3_600_000, 500),
        entry("ping", null, now - 3 * 86_400_000, 7), // outside the day
      ]),
    ).run();
    await new Promise((r) => setTimeout(r, 50)); // the usage log row of memory_store is written after its response
    const report = await call(t.apiKey, "get_usage_report", { period: "day" });
    expect(report).toMatchObject({ period: "day", bucket_ms: 3_600_000 });
    expect(report.buckets).toHaveLength(24);
    // From the fixed buckets: rank 10 is the last of (7, 10], rank 19 the fourth of five in (15, 20].
    expect(report.tools.find((x: any) => x.tool === "search")).toMatchObject({
      tool: "search",
      calls: 20,
      errors: 1,
      p50_ms: 10,
      p95_ms: 19,
      d1_round_trips: 1,
      d1_ms: 0.5,
      d1_rows_read: 0,
    });
    expect(report.tools.find((x: any) => x.tool === "ping")).toMatchObject({ calls: 1, p50_ms: 500 });
    const last = report.buckets[report.buckets.length - 1];
    expect(last.calls.search).toBe(20);
    expect(report.buckets[report.buckets.length - 4].calls).toEqual({ ping: 1 });
    expect(report.projects).toEqual([{ project: "web", items: 1, tokens: expect.any(Number), stashed_tokens: 0 }]);
    expect(
      (await call(t.apiKey, "get_usage_report", { period: "week" })).tools.find((x: any) => x.tool === "ping").calls,
    ).toBe(2);

    const apiOnly = await newKey(t.tenantId, { scopes: ["read"], projects: ["api"] });
    expect(await call(apiOnly.apiKey, "get_usage_report", {})).toMatchObject({
      tools: [],
      projects: [],
      total_calls: 0,
    });
  });
});

describe("context_get_working_set with GC candidates", () => {
  it("lists candidates as context_gc_analyze scores them without recording a GC cycle", async () => {
    const t = await newTenant();
    const logs = await call(t.apiKey, "memory_batch_store", {
      namespace: "p",
      memories: [
        { content: "build log 1", type: "log" },
        { content: "a decision", type: "decision" },
      ],
    });
    const survivals = () =>
      t.db
        .prepare("SELECT SUM(gc_survival_count) AS n FROM items WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first<{ n: number }>();
    const set = await call(t.apiKey, "context_get_working_set", { project_id: "p", include_gc_candidates: true });
    expect(set.gc_candidates.map((c: any) => c.segment_id)).toEqual([logs.ids[0]]);
    expect((await survivals())!.n).toBe(0);
    const analysis = await call(t.apiKey, "context_gc_analyze", { project_id: "p" });
    expect(analysis.pruning_candidates).toEqual(set.gc_candidates);
    expect((await survivals())!.n).toBe(1);
    expect(await call(t.apiKey, "context_get_working_set", { project_id: "p" })).not.toHaveProperty("gc_candidates");
  });
});

describe("GET /dashboard", () => {
  it("serves the page with a strict CSP and no inline script, and its bundle by name only", async () => {
    const page = await request("/dashboard");
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy")!;
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "require-trusted-types-for 'script'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain("unsafe");
    const html = await page.text();
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/dashboard/assets/app.js">']);
    expect(html).not.toMatch(/<style|\son\w+=/);

    const js = await request("/dashboard/assets/app.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toContain("text/javascript");
    expect(js.headers.get("content-security-policy")).toBe(csp);
    expect((await js.text()).length).toBeGreaterThan(10_000);
    expect((await request("/dashboard/assets/app.css")).headers.get("content-type")).toContain("text/css");
    for (const path of [
      "/dashboard/assets/o200k_base.bin",
      "/dashboard/assets/..%2Ftokenizer%2Fo200k_base.bin",
      "/dashboard/assets/%2e%2e/tokenizer/o200k_base.bin",
      "/tokenizer/o200k_base.bin",
    ]) {
      expect((await request(path)).status, path).toBe(404);
    }
  });

  it("needs no key to load, and the admin API still needs one", async () => {
    expect((await request("/dashboard")).status).toBe(200);
    expect((await admin("GET", "/tenants", undefined, "wrong")).status).toBe(401);
  });
});
