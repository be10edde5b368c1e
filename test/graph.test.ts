import { describe, expect, it } from "vitest";
import { call, callTool, newTenant, tenantDb, untilLogged, waitForEmbeddings } from "./helpers";

describe("context links (seed 000)", () => {
  it("links a message to chunks and reads the links both ways", async () => {
    const t = await newTenant();
    const doc = await call(t.apiKey, "store_memory", {
      file_name: "auth.md",
      content: "JWT tokens are signed with RS256 and expire after one hour.",
    });
    const note = await call(t.apiKey, "store_memory", { file_name: "db.md", content: "The database is Postgres 15." });
    await waitForEmbeddings(t.tenantId);
    const chunks = (await call(t.apiKey, "search", { query: "JWT Postgres", mode: "keyword" })).results.map(
      (r: any) => r.chunk_id,
    );
    expect(chunks).toHaveLength(2);
    const message = await call(t.apiKey, "log_chat", {
      conversation_id: "session_456",
      role: "assistant",
      content: "Tokens use RS256 and expire hourly.",
    });
    expect(await call(t.apiKey, "store_context_links", { message_id: message.message_id, chunk_ids: chunks })).toEqual({
      success: true,
      links_created: 2,
      message_id: message.message_id,
      linked_chunks: chunks,
    });
    const links = await call(t.apiKey, "get_context_links_for_message", { message_id: message.message_id });
    expect(links).toMatchObject({ success: true, message_id: message.message_id, total_links: 2 });
    expect(links.context_links.map((l: any) => l.resource_id).sort()).toEqual(
      [doc.resource_id, note.resource_id].sort(),
    );
    for (const l of links.context_links) expect(l.link_strength).toBeGreaterThanOrEqual(0);
    const messages = await call(t.apiKey, "get_messages_for_chunk", { chunk_id: chunks[0] });
    expect(messages).toEqual({
      success: true,
      chunk_id: chunks[0],
      messages: [
        {
          message_id: message.message_id,
          content: "Tokens use RS256 and expire hourly.",
          conversation_id: "session_456",
          timestamp: expect.any(String),
        },
      ],
      total_messages: 1,
    });
    await untilLogged(t.tenantId, 1); // the busiest hour comes from the usage log
    const stats = await call(t.apiKey, "get_context_usage_statistics");
    expect(stats.statistics).toMatchObject({
      total_context_links: 2,
      total_chunks: 3,
      total_messages: 1,
      average_links_per_message: 2,
    });
    expect(stats.statistics.most_referenced_chunks).toHaveLength(2);
    expect(stats.statistics.context_usage_trends.peak_usage_hour).toBe(new Date().getUTCHours());
  });

  it("refuses links to chunks that do not exist or belong to another tenant, writing nothing", async () => {
    const a = await newTenant();
    const b = await newTenant();
    await call(a.apiKey, "store_memory", { file_name: "x", content: "tenant a text" });
    const foreign = (await call(a.apiKey, "search", { query: "tenant" })).results[0].chunk_id;
    await call(b.apiKey, "store_memory", { file_name: "y", content: "tenant b text" });
    const own = (await call(b.apiKey, "search", { query: "tenant" })).results[0].chunk_id;
    const message = await call(b.apiKey, "log_chat", { conversation_id: "c", role: "user", content: "hi" });
    const response = await callTool(b.apiKey, "store_context_links", {
      message_id: message.message_id,
      chunk_ids: [own, foreign],
    });
    expect(response.error).toMatchObject({
      data: { code: "NOT_FOUND", details: { parameter: "chunk_ids", missing: [foreign] } },
    });
    const missingMessage = await callTool(b.apiKey, "store_context_links", { message_id: "msg_404", chunk_ids: [own] });
    expect(missingMessage.error!.data.details.parameter).toBe("message_id");
    expect(await b.db.prepare("SELECT COUNT(*) AS n FROM links WHERE tenant_id = ?").bind(b.tenantId).first("n")).toBe(
      0,
    );
  });
});

describe("knowledge graph (seed 000)", () => {
  it("traverses relationships by depth, terminating on cycles, with paths", async () => {
    const t = await newTenant();
    const [a, b, c, d] = (
      await call(t.apiKey, "memory_batch_store", {
        memories: ["alpha doc", "beta doc", "gamma doc", "delta doc"].map((content) => ({ content })),
      })
    ).ids;
    await call(t.apiKey, "link_resources", {
      source_id: a,
      target_id: b,
      relationship_type: "depends_on",
      weight: 0.95,
    });
    await call(t.apiKey, "link_resources", {
      source_id: b,
      target_id: c,
      relationship_type: "related_to",
      weight: 0.82,
    });
    await call(t.apiKey, "link_resources", {
      source_id: c,
      target_id: a,
      relationship_type: "references",
      weight: 0.5,
    }); // cycle
    await call(t.apiKey, "link_resources", { source_id: c, target_id: d, relationship_type: "part_of", weight: 0.7 });
    const result = await call(t.apiKey, "get_document_relationships", { document_id: a, max_depth: 5 });
    expect(result).toEqual({
      success: true,
      document_id: a,
      relationships: {
        depth_1: expect.arrayContaining([
          { document_id: b, relationship_type: "depends_on", strength: 0.95 },
          { document_id: c, relationship_type: "references", strength: 0.5 },
        ]),
        depth_2: [{ document_id: d, relationship_type: "part_of", strength: 0.7, path: [a, c, d] }],
      },
      total_relationships: 3,
      max_depth_reached: 2,
    });
    const shallow = await call(t.apiKey, "get_document_relationships", { document_id: a, max_depth: 1 });
    expect(Object.keys(shallow.relationships)).toEqual(["depth_1"]);
    expect(
      (await callTool(t.apiKey, "get_document_relationships", { document_id: a, max_depth: 6 })).error!.data.details
        .parameter,
    ).toBe("max_depth");
    expect((await callTool(t.apiKey, "get_document_relationships", { document_id: "doc_404" })).error!.data.code).toBe(
      "NOT_FOUND",
    );
    expect(
      (await callTool(t.apiKey, "link_resources", { source_id: a, target_id: a, relationship_type: "related_to" }))
        .error!.data.details.parameter,
    ).toBe("target_id");
    expect(
      (await callTool(t.apiKey, "link_resources", { source_id: a, target_id: b, relationship_type: "loves" })).error!
        .data.details.parameter,
    ).toBe("relationship_type");
  });

  it("query_graph matches resources and filters by relationship type", async () => {
    const t = await newTenant();
    const [jwt, keys, other] = (
      await call(t.apiKey, "memory_batch_store", {
        memories: [
          { content: "JWT authentication implementation with refresh tokens" },
          { content: "Signing keys live in the vault" },
          { content: "authentication screen copy text" },
        ],
      })
    ).ids;
    await call(t.apiKey, "link_resources", {
      source_id: jwt,
      target_id: keys,
      relationship_type: "depends_on",
      weight: 0.95,
    });
    const all = await call(t.apiKey, "query_graph", { query: "authentication implementation" });
    expect(all).toMatchObject({ success: true, query: "authentication implementation" });
    expect(all.results[0]).toMatchObject({
      resource_id: jwt,
      relationships: [{ target_id: keys, relationship_type: "depends_on", strength: 0.95 }],
    });
    // "authentication" is in two of the three documents: alone it says too little to count as a match.
    expect(all.results.map((r: any) => r.resource_id)).not.toContain(other);
    expect((await call(t.apiKey, "query_graph", { query: "authentication screen" })).results[0].resource_id).toBe(
      other,
    );
    const filtered = await call(t.apiKey, "query_graph", {
      query: "authentication implementation",
      relationship_types: ["depends_on"],
    });
    // The signing keys share no word with the query: they come through their link, scored 0.3 x its
    // weight x the JWT note's score.
    expect(filtered.results.map((r: any) => r.resource_id)).toEqual([jwt, keys]);
    expect(filtered.results[1].relevance_score).toBeCloseTo(0.3 * 0.95 * filtered.results[0].relevance_score, 3);
    expect(
      (await call(t.apiKey, "query_graph", { query: "authentication", relationship_types: ["supersedes"] }))
        .total_results,
    ).toBe(0);
  });

  it("auto_link_documents links near-duplicates above the threshold", async () => {
    const t = await newTenant();
    const [a, b, c] = (
      await call(t.apiKey, "memory_batch_store", {
        memories: [
          { content: "The deployment pipeline runs the unit tests and then deploys to staging" },
          { content: "The deployment pipeline runs unit tests, then deploys to staging." },
          { content: "Bananas are rich in potassium" },
        ],
      })
    ).ids;
    const result = await call(t.apiKey, "auto_link_documents", { document_id: a });
    expect(result).toMatchObject({ success: true, document_id: a, links_created: 1 });
    expect(result.similar_documents).toEqual([
      { document_id: b, similarity_score: expect.any(Number), relationship_type: "similar_content" },
    ]);
    expect(result.similar_documents[0].similarity_score).toBeGreaterThanOrEqual(0.8);
    expect(
      (await call(t.apiKey, "auto_link_documents", { document_id: a, similarity_threshold: 0.999 })).links_created,
    ).toBe(0);
    expect(
      (await call(t.apiKey, "get_document_relationships", { document_id: a })).relationships.depth_1.map(
        (r: any) => r.document_id,
      ),
    ).not.toContain(c);
  });

  it("the auto-link job links new items and conversations to their neighbours through the queue", async () => {
    const t = await newTenant();
    const [a, b] = (
      await call(t.apiKey, "memory_batch_store", {
        memories: [
          { content: "Invoices are emailed on the first business day of each month" },
          { content: "Invoices are emailed on the first business day of every month" },
        ],
      })
    ).ids;
    await call(t.apiKey, "add_message", {
      contextId: "trip-1",
      message: "Book the night train from Paris to Vienna",
      role: "user",
    });
    await call(t.apiKey, "add_message", {
      contextId: "trip-2",
      message: "Book the night train from Paris to Vienna please",
      role: "user",
    });
    await expect
      .poll(
        async () =>
          (await call(t.apiKey, "get_document_relationships", { document_id: a })).relationships.depth_1?.map(
            (r: any) => r.document_id,
          ),
        { timeout: 15_000, interval: 500 },
      )
      .toEqual([b]);
    await expect
      .poll(async () => call(t.apiKey, "get_related_contexts", { contextId: "trip-2" }), {
        timeout: 15_000,
        interval: 500,
      })
      .toEqual(["trip-1"]);
    const edge = await t.db
      .prepare("SELECT relationship_type, weight FROM links WHERE tenant_id = ? AND source_type = 'conversation'")
      .bind(t.tenantId)
      .first<any>();
    expect(edge.relationship_type).toBe("similar");
    expect(edge.weight).toBeGreaterThanOrEqual(0.6);
  }, 40_000);
});

describe("usage log readers", () => {
  it("get_tool_conversations and get_context_metrics read the tenant's own calls only", async () => {
    const t = await newTenant();
    const other = await newTenant();
    await call(t.apiKey, "add_message", { contextId: "s-1", message: "first message of s-1", role: "user" });
    await call(t.apiKey, "add_message", { contextId: "s-1", message: "second", role: "assistant" });
    await call(t.apiKey, "add_message", { contextId: "s-2", message: "opening of s-2", role: "user" });
    await call(t.apiKey, "summarize_context", { contextId: "s-1" });
    await call(other.apiKey, "add_message", { contextId: "s-9", message: "elsewhere", role: "user" });
    await untilLogged(t.tenantId, 4); // three add_message, one summarize_context, in the hourly aggregates
    await untilLogged(other.tenantId, 1);
    const used = await call(t.apiKey, "get_tool_conversations", { tool_name: "add_message" });
    expect(used).toMatchObject({
      success: true,
      tool_name: "add_message",
      total_conversations: 2,
      usage_statistics: { total_invocations: 3, average_per_conversation: 1.5 },
    });
    expect(used.conversations.map((c: any) => [c.conversation_id, c.usage_count])).toEqual([
      ["s-2", 1],
      ["s-1", 2],
    ]);
    expect(used.conversations[0].context_summary).toBe("opening of s-2");
    expect(used.conversations[1].context_summary).not.toBe("");
    expect(
      (await call(t.apiKey, "get_tool_conversations", { tool_name: "add_message", limit: 1 })).conversations,
    ).toHaveLength(1);
    expect(
      (await call(other.apiKey, "get_tool_conversations", { tool_name: "summarize_context" })).total_conversations,
    ).toBe(0);

    const metrics = await call(t.apiKey, "get_context_metrics", { period: "day" });
    expect(metrics).toMatchObject({ success: true, period: "day" });
    expect(metrics.metrics.byType).toMatchObject({ add_message: 3, summarize_context: 1 });
    expect(metrics.metrics.totalCalls).toBeGreaterThanOrEqual(4);
    expect(metrics.metrics.historyTrend).toEqual([
      { date: new Date().toISOString().slice(0, 10), count: metrics.metrics.totalCalls },
    ]);
    expect(metrics.metrics.contextStats).toEqual({
      totalContexts: 2,
      averageMessagesPerContext: 1.5,
      summaryRate: 0.5,
    });
    expect(metrics.metrics.relationshipMetrics).toEqual({
      totalRelationships: 0,
      byType: { similar: 0, continues: 0, references: 0, parent: 0, child: 0 },
    });
    expect(metrics.metrics.averageScore).toBe(0.5);
    expect((await callTool(t.apiKey, "get_context_metrics", { period: "year" })).error!.data.details.parameter).toBe(
      "period",
    );
  });
});

describe("cached contexts and auto-link", () => {
  it("a link run that creates or strengthens nothing keeps cached contexts (no generation bump)", async () => {
    const t = await newTenant();
    const { ids } = await call(t.apiKey, "memory_batch_store", {
      namespace: "ops",
      memories: [
        { content: "The release train leaves every Tuesday at noon" },
        { content: "The release train leaves every Tuesday at noon sharp" },
      ],
    });
    await waitForLinking(t.tenantId);
    const args = { query: "when does the release train leave", token_budget: 300, namespace: "ops" };
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(false);
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(true);
    // Same neighbours, same weights: the upsert changes no row, so the cached context stays valid.
    expect((await call(t.apiKey, "auto_link_documents", { document_id: ids[0] })).links_created).toBe(1);
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(true);
    // A new link does invalidate it.
    await call(t.apiKey, "link_resources", { source_id: ids[1], target_id: ids[0], relationship_type: "supersedes" });
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(false);
  });

  it("stores a similar pair once: linking it again from the other end keeps cached contexts; a stronger link is written", async () => {
    const t = await newTenant();
    const similarLinks = () =>
      count(
        "SELECT COUNT(*) AS n FROM links WHERE tenant_id = ? AND relationship_type = 'similar_content'",
        t.tenantId,
      );
    // The first memory is linked before the second exists (it finds nothing); the second then links to it.
    const first = (
      await call(t.apiKey, "memory_store", {
        namespace: "ops",
        content: "The release train leaves every Tuesday at noon",
      })
    ).id;
    await waitForLinking(t.tenantId);
    const second = (
      await call(t.apiKey, "memory_store", {
        namespace: "ops",
        content: "The release train leaves every Tuesday at noon sharp",
      })
    ).id;
    await waitForLinking(t.tenantId);
    expect(await similarLinks()).toBe(1);
    const args = { query: "when does the release train leave", token_budget: 300, namespace: "ops" };
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(false);
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(true);
    // Re-linking the first finds the second at the same similarity: the reverse of an existing link.
    const relinked = await call(t.apiKey, "auto_link_documents", { document_id: first });
    expect(relinked.similar_documents.map((d: any) => d.document_id)).toEqual([second]);
    expect(await similarLinks()).toBe(1);
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(true);
    const related = await call(t.apiKey, "get_document_relationships", { document_id: first, max_depth: 1 });
    expect(related.relationships.depth_1.map((r: any) => r.document_id)).toEqual([second]);
    // Weaker the other way round: this direction is written, and the cached context goes.
    await t.db
      .prepare("UPDATE links SET weight = 0.1 WHERE tenant_id = ? AND relationship_type = 'similar_content'")
      .bind(t.tenantId)
      .run();
    await call(t.apiKey, "auto_link_documents", { document_id: first });
    expect(await similarLinks()).toBe(2);
    expect((await call(t.apiKey, "memory_context_build", args)).cache_hit).toBe(false);
  });

  it("a link change drops only the cached contexts that followed a link of one of its items", async () => {
    const t = await newTenant();
    const { ids } = await call(t.apiKey, "memory_batch_store", {
      namespace: "ops",
      memories: [
        { content: "The release train leaves every Tuesday at noon" },
        { content: "Deploy freezes start on Friday evening" },
        { content: "Penguins huddle together through the antarctic winter" },
        { content: "Emperor penguins breed on sea ice" },
        { content: "Lighthouses guide ships past rocky coasts" },
        { content: "Volcanoes erupt molten lava" },
      ],
    });
    const [train, freeze, huddle, breed, lighthouse, volcano] = ids as string[];
    await waitForLinking(t.tenantId);
    await call(t.apiKey, "link_resources", { source_id: train, target_id: freeze, relationship_type: "related_to" });
    const trains = { query: "when does the release train leave", token_budget: 300, namespace: "ops" };
    const shallow = { ...trains, max_depth: 1 };
    const penguins = { query: "penguins antarctic winter", token_budget: 300, namespace: "ops" };
    const build = async (args: Record<string, unknown>) =>
      (await call(t.apiKey, "memory_context_build", args)).cache_hit as boolean;
    const fill = async () => {
      for (const args of [trains, shallow, penguins]) await build(args);
      return Promise.all([trains, shallow, penguins].map(build));
    };
    const first = await call(t.apiKey, "memory_context_build", trains);
    expect(first.memories.map((m: any) => [m.id, m.source])).toEqual([
      [train, "direct"],
      [freeze, "related"],
    ]);
    expect(await fill()).toEqual([true, true, true]);
    // Between two items no cached context read: every context stays.
    await call(t.apiKey, "link_resources", {
      source_id: lighthouse,
      target_id: volcano,
      relationship_type: "related_to",
    });
    expect(await Promise.all([trains, shallow, penguins].map(build))).toEqual([true, true, true]);
    // From an item the train context reached at depth 1: with max_depth 2 it follows that item's links,
    // with max_depth 1 it stops there; the penguin context never saw it.
    await call(t.apiKey, "link_resources", { source_id: freeze, target_id: volcano, relationship_type: "related_to" });
    expect(await Promise.all([trains, shallow, penguins].map(build))).toEqual([false, true, true]);
    expect(
      (await call(t.apiKey, "memory_context_build", { ...trains, use_cache: false })).memories.map((m: any) => m.id),
    ).toEqual([train, freeze, volcano]);
    // A direct hit's new link drops the penguin context only.
    expect(await fill()).toEqual([true, true, true]);
    await call(t.apiKey, "link_resources", { source_id: huddle, target_id: breed, relationship_type: "related_to" });
    expect(await Promise.all([trains, shallow, penguins].map(build))).toEqual([true, true, false]);
  });
});

async function count(sql: string, tenantId: string): Promise<number> {
  return (await (await tenantDb(tenantId)).prepare(sql).bind(tenantId).first<{ n: number }>())!.n;
}

/** Waits until the auto-link job has linked every item of the tenant. */
async function waitForLinking(tenantId: string): Promise<void> {
  for (const started = Date.now(); ; ) {
    if ((await count("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL", tenantId)) === 0)
      return;
    if (Date.now() - started > 15_000) throw new Error("auto-link job did not finish");
    await new Promise((r) => setTimeout(r, 100));
  }
}
