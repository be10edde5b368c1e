import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import exportV1 from "./fixtures/export-v1.ndjson?raw";
import mcpMemory from "./fixtures/mcp-memory.jsonl?raw";
import mem0Export from "./fixtures/mem0-export.json?raw";
import { call, newKey, newTenant, normalisedExport, request, type TestTenant, tenantDb } from "./helpers";

async function exportOf(tenantId: string, token?: string, query = ""): Promise<Response> {
  return request(`/admin/tenants/${tenantId}/export${query}`, {
    headers: { authorization: `Bearer ${token ?? "test-admin-token"}` },
  });
}

async function importInto(tenantId: string, body: string, query = "", token?: string): Promise<Response> {
  return request(`/admin/tenants/${tenantId}/import${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token ?? "test-admin-token"}`, "content-type": "application/x-ndjson" },
    body,
  });
}

async function rowCount(tenantId: string): Promise<Record<string, number>> {
  const db = await tenantDb(tenantId);
  const count = async (table: string) =>
    (await db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(tenantId).first<{ n: number }>())!
      .n;
  return {
    items: await count("items"),
    chunks: await count("chunks"),
    conversations: await count("conversations"),
    summaries: await count("summaries"),
    links: await count("links"),
  };
}

/** A tenant with one of everything an export carries. */
async function populated(): Promise<TestTenant> {
  const t = await newTenant();
  const key = (await newKey(t.tenantId)).apiKey;
  await call(key, "memory_store", {
    content: "The user lives in Paris",
    key: "user.city",
    namespace: "me",
    tags: ["home"],
    importance: 0.9,
  });
  await call(key, "memory_store", { content: "The user lives in Lyon", key: "user.city", namespace: "me" });
  const doc = await call(key, "store_memory", {
    file_name: "guide.md",
    project_id: "docs",
    content: Array.from(
      { length: 40 },
      (_, i) => `Step ${i}: check the valve number ${i} and write it down in the log.`,
    ).join("\n\n"),
  });
  const other = await call(key, "store_memory", {
    file_name: "faq.md",
    project_id: "docs",
    content: "Valves are checked every morning.",
  });
  await call(key, "link_resources", {
    source_id: doc.resource_id,
    target_id: other.resource_id,
    relationship_type: "references",
  });
  for (let i = 0; i < 6; i++) {
    await call(key, "log_chat", {
      conversation_id: "chat-1",
      project_id: "me",
      role: i % 2 ? "assistant" : "user",
      agent_name: i % 2 ? "Bot" : "Ana",
      content: `turn ${i} about the valves and the log`,
    });
  }
  await call(key, "summarize_context", { contextId: "chat-1" });
  await call(key, "context_set_current_task", { project_id: "me", task_id: "t-1" });
  const hit = (await call(key, "search", { query: "valve number 12", project: "docs", mode: "keyword", limit: 1 }))
    .results[0];
  const message = (await call(key, "search", { query: "turn 3 valves", project: "me", mode: "keyword", limit: 1 }))
    .results[0];
  await call(key, "store_context_links", { message_id: message.item_id, chunk_ids: [hit.chunk_id] });
  return t;
}

describe("export and import (NDJSON)", () => {
  it("round trip: export A, import into an empty B, export B gives the same records", async () => {
    const a = await populated();
    const first = await exportOf(a.tenantId);
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toContain("application/x-ndjson");
    const exported = await first.text();
    const lines = exported
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({
      type: "header",
      format: "context-edge-export",
      version: 3,
      tenant_id: a.tenantId,
      project: null,
    });
    const types = lines.map((l) => l.type);
    for (const type of ["conversation", "item", "summary", "project_task", "link"]) expect(types).toContain(type);
    expect(lines.find((l) => l.type === "item" && l.content === "The user lives in Paris")).toMatchObject({
      tier: "superseded",
      key: "user.city",
      tags: ["home"],
      importance: 0.9,
      valid_to: expect.any(Number),
    });
    // A message logged with an agent_name needs no speaker of its own: its metadata gives it back.
    const message = lines.find((l) => l.type === "item" && l.kind === "message");
    expect(message).toMatchObject({ metadata: { agent_name: expect.any(String) } });
    expect(message.speaker).toBeUndefined();
    expect(lines.some((l) => l.type === "link" && /#\d+$/.test(l.target_id))).toBe(true); // a context link names its chunk by item and index
    expect(exported).not.toMatch(/"tokens"|content_hash|api_key|embedded_at/);

    const b = await newTenant();
    const imported = await importInto(b.tenantId, exported);
    expect(imported.status).toBe(200);
    const summary = await imported.json<any>();
    expect(summary).toMatchObject({
      format: "context-edge",
      imported: { conversations: 1, summaries: 1, project_tasks: 1, links: 2 },
    });
    expect(summary.imported.items).toBe(lines.filter((l) => l.type === "item").length);
    const again = await (await exportOf(b.tenantId)).text();
    expect(normalisedExport(again, b.tenantId)).toEqual(normalisedExport(exported, a.tenantId));
    expect(await rowCount(b.tenantId)).toEqual(await rowCount(a.tenantId));

    // The copy works: keyword search at once, the keyed fact's history, the conversation in order.
    const bKey = b.apiKey;
    expect(
      (await call(bKey, "search", { query: "valve number 12", project: "docs", mode: "keyword", limit: 1 })).results[0]
        .content,
    ).toContain("valve number 12");
    expect(
      (await call(bKey, "memory_get", { key: "user.city", namespace: "me", include_history: true })).versions.map(
        (v: any) => v.content,
      ),
    ).toEqual(["The user lives in Lyon", "The user lives in Paris"]);
    expect((await call(bKey, "retrieve_context", { contextId: "chat-1" })).messages.map((m: any) => m.content)).toEqual(
      Array.from({ length: 6 }, (_, i) => `turn ${i} about the valves and the log`),
    );

    // A conversation keeps its project: moving it with ?project= is a conflict that writes nothing.
    const before = await rowCount(b.tenantId);
    const moved = await importInto(b.tenantId, exported, "?project=elsewhere");
    expect(moved.status).toBe(409);
    expect((await moved.json<any>()).error.message).toBe(
      "Conversation 'chat-1' is in project 'me' here; the file puts it in 'elsewhere'",
    );
    expect(await rowCount(b.tenantId)).toEqual(before);

    // Importing the same file again adds nothing.
    const twice = await (await importInto(b.tenantId, exported)).json<any>();
    expect(twice.imported).toEqual({
      items: 0,
      conversations: 0,
      summaries: 0,
      links: 0,
      project_tasks: 0,
      project_settings: 0,
      extraction_windows: 0,
      memory_events: 0,
      documents: 0,
    });
    expect(twice.skipped.items).toBe(summary.imported.items);
    expect(await rowCount(b.tenantId)).toEqual(await rowCount(a.tenantId));
  });

  it("a bad line answers 400 with its number and reason and writes nothing", async () => {
    const t = await newTenant();
    const header = JSON.stringify({ type: "header", format: "context-edge-export", version: 1 });
    const item = (i: number) =>
      JSON.stringify({
        type: "item",
        id: `m${i}`,
        project: "p",
        kind: "memory",
        item_type: "note",
        content: `memory ${i}`,
        created_at: 1_700_000_000_000 + i,
      });
    const lines = [header, ...Array.from({ length: 999 }, (_, i) => item(i))];
    lines[2] = JSON.stringify({
      type: "item",
      id: "bad",
      project: "p",
      kind: "memory",
      item_type: "note",
      content: "",
      created_at: 1,
    });
    const response = await importInto(t.tenantId, lines.join("\n"));
    expect(response.status).toBe(400);
    const body = await response.json<any>();
    expect(body.error).toMatchObject({ code: "INVALID_PARAMETER", details: { line: 3 } });
    expect(body.error.message).toMatch(/^Line 3: content: /);
    expect(await rowCount(t.tenantId)).toEqual({ items: 0, chunks: 0, conversations: 0, summaries: 0, links: 0 });

    // Version 2's records: a derived memory's fields, windows, events and settings, checked as strictly.
    const header2 = JSON.stringify({ type: "header", format: "context-edge-export", version: 2 });
    const line = (fields: Record<string, unknown>) =>
      JSON.stringify({
        type: "item",
        id: "m",
        project: "p",
        kind: "memory",
        item_type: "note",
        content: "Ana lives in Porto.",
        created_at: 1,
        ...fields,
      });
    const derived = { memory_kind: "fact", subject: "Ana", valid_from: 1, sources: ["turn"] };
    const event = (id: string, fields: Record<string, unknown> = {}) =>
      JSON.stringify({ type: "memory_event", id, project: "p", at: 1, event: "added", ...fields });
    const conversation = JSON.stringify({ type: "conversation", id: "c", project: "p", created_at: 1, updated_at: 1 });
    for (const [body, message] of [
      ["not json", "Line 1: not valid JSON"],
      [`{"type":"item"}`, "Line 1: the first line must be the header"],
      [`${header}\n{"type":"widget"}`, 'Line 2: unknown record type "widget"'],
      [`${header}\n{oops`, "Line 2: not valid JSON"],
      [
        JSON.stringify({ type: "header", format: "context-edge-export", version: 4 }),
        "Line 1: export version 4 is not supported (this server reads versions 1, 2 and 3)",
      ],
      [
        `${header2}\n${line({ subject: "Ana" })}`,
        "Line 2: subject: only a derived memory (one with a memory_kind) has this field",
      ],
      [
        `${header2}\n${line({ ...derived, subject: undefined })}`,
        "Line 2: subject: a derived memory names its subject",
      ],
      [
        `${header2}\n${line({ ...derived, sources: undefined })}`,
        "Line 2: sources: a derived memory lists its source turns",
      ],
      [
        `${header2}\n${line({ ...derived, kind: "message", item_type: "message", conversation_id: "c" })}`,
        "Line 2: memory_kind: a derived memory is of kind memory, not message",
      ],
      [`${header2}\n${line({ ...derived, when_precision: "week" })}`, "Line 2: when_precision: "],
      [`${header2}\n${line({ speaker: "Ana" })}`, "Line 2: speaker: only a message of a conversation has a speaker"],
      [`${header2}\n${event("e1")}\n${event("e1")}`, "Line 3: memory_event id 'e1' appears twice"],
      [
        `${header2}\n${conversation}\n${event("e2", { project: "q", conversation_id: "c" })}`,
        "Line 3: memory_event of conversation 'c' is in project 'q' but the conversation is in 'p'",
      ],
      [
        `${header2}\n${JSON.stringify({ type: "extraction_window", id: "w", project: "p", conversation_id: "c", first_position: -1, last_position: 0, status: "done", model: "m", created_at: 1 })}`,
        "Line 2: first_position: ",
      ],
      [
        `${header2}\n${JSON.stringify({ type: "project_settings", project: "p", extract: "yes", updated_at: 1 })}`,
        "Line 2: extract: ",
      ],
    ] as const) {
      const answer = await (await importInto(t.tenantId, body, "?format=context-edge")).json<any>();
      expect(answer.error.message).toContain(message);
    }
    expect(await rowCount(t.tenantId)).toEqual({ items: 0, chunks: 0, conversations: 0, summaries: 0, links: 0 });
  });

  it("an export of version 1 (written before this server exported derived memories) still imports", async () => {
    // test/fixtures/export-v1.ndjson is what version 1 exported of a tenant whose turns were extracted: a keyed fact
    // and its history, a conversation, its summary and task, and the memories derived from it as plain memories.
    const t = await newTenant();
    const response = await importInto(t.tenantId, exportV1);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      format: "context-edge",
      imported: { items: 7, conversations: 1, summaries: 1, project_tasks: 1, memory_events: 0 },
    });
    expect(
      (await call(t.apiKey, "retrieve_context", { contextId: "chat-1" })).messages.map((m: any) => m.content),
    ).toEqual(["I live in Porto.", "Noted, thanks.", "My favorite food is bacalhau."]);
    expect(
      (await call(t.apiKey, "memory_get", { key: "user.city", namespace: "me", include_history: true })).versions.map(
        (v: any) => v.content,
      ),
    ).toEqual(["The user lives in Lyon", "The user lives in Paris"]);
    // Version 1 carried no cursor: the conversation starts unread, and its next turn goes past the ones it has.
    expect(
      await t.db
        .prepare(
          "SELECT extracted_count, extracted_tokens, next_position, message_count FROM conversations WHERE tenant_id = ? AND id = 'chat-1'",
        )
        .bind(t.tenantId)
        .first(),
    ).toEqual({ extracted_count: 0, extracted_tokens: 0, next_position: 3, message_count: 3 });
    // Every line of the old file is in the copy's export as it was, under the current version.
    const copy = (await (await exportOf(t.tenantId)).text())
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l.replace(/~[0-9a-f]{8}/g, "")));
    expect(copy[0]).toMatchObject({ type: "header", version: 3 });
    const old = exportV1
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(copy).toHaveLength(old.length);
    for (const line of old.slice(1)) {
      const { type } = line;
      const same = copy.find(
        (c) => c.type === type && (type === "summary" || type === "project_task" ? true : c.id === line.id),
      );
      expect(same, JSON.stringify(line)).toMatchObject(line);
    }
  });

  it("reads the MCP memory server's JSONL and a mem0 export", async () => {
    const t = await newTenant();
    const fromMcp = await (await importInto(t.tenantId, mcpMemory, "?project=kg")).json<any>();
    expect(fromMcp).toMatchObject({ format: "mcp-memory", imported: { items: 3, links: 2 } });
    const alice = await call(t.apiKey, "memory_get", { key: "entity:Alice Moreau", namespace: "kg" });
    expect(alice.content).toBe(
      "Alice Moreau (person)\n- Works as a marine biologist\n- Prefers tea over coffee\n- Lives in Brest",
    );
    expect(alice.tags).toEqual(["person"]);
    expect(alice.links.map((l: any) => [l.relationship_type, l.other_preview.split("\n")[0]]).sort()).toEqual([
      ["leads", "Project Kelp (project)"],
      ["works_at", "Brest Aquarium (organization)"],
    ]);
    expect((await call(t.apiKey, "search", { query: "seal rescue", project: "kg" })).results[0].content).toContain(
      "Brest Aquarium",
    );

    const fromMem0 = await (await importInto(t.tenantId, mem0Export, "?project=alex")).json<any>();
    expect(fromMem0).toMatchObject({ format: "mem0", imported: { items: 3 } });
    const hit = (await call(t.apiKey, "search", { query: "peanuts allergy", project: "alex" })).results[0];
    const peanuts = await call(t.apiKey, "memory_get", { id: hit.item_id });
    expect(peanuts).toMatchObject({
      content: "User is allergic to peanuts",
      tags: ["health"],
      metadata: { mem0_id: "f7a1c2d3-0000-4000-8000-000000000002", user_id: "alex", source: "mem0" },
    });
    expect(peanuts.history.created_at).toBe("2024-06-02T10:15:00.000Z");
    expect((await (await importInto(t.tenantId, mem0Export, "?project=alex")).json<any>()).imported.items).toBe(0);

    const broken = await (
      await importInto(
        t.tenantId,
        '{"type":"entity","name":"A","entityType":"x"}\n{"type":"relation","from":"A","to":"Nobody","relationType":"knows"}',
      )
    ).json<any>();
    expect(broken.error).toMatchObject({
      message: "Line 2: relation names entity 'Nobody', which the file does not define",
      details: { line: 2 },
    });
  });

  it("a tenant admin key exports its own tenant only, and a project-limited one its projects only", async () => {
    const a = await populated();
    const b = await newTenant();
    const adminOfA = (await newKey(a.tenantId, { scopes: ["admin"] })).apiKey;
    const docsAdmin = (await newKey(a.tenantId, { scopes: ["admin"], projects: ["docs"] })).apiKey;
    expect((await exportOf(b.tenantId, adminOfA)).status).toBe(403);
    expect((await importInto(b.tenantId, mem0Export, "", adminOfA)).status).toBe(403);
    expect((await exportOf("no-such-tenant")).status).toBe(404);
    const emptyProject = await (await importInto(a.tenantId, mem0Export, "?project=")).json<any>();
    expect(emptyProject.error).toMatchObject({
      code: "INVALID_PARAMETER",
      message: "project must be 1 to 200 characters (got 0)",
    });
    const leaving = await newTenant();
    await env.CONTROL.prepare("UPDATE tenants SET deleting_at = ? WHERE id = ?")
      .bind(Date.now(), leaving.tenantId)
      .run();
    expect((await exportOf(leaving.tenantId)).status).toBe(409);
    expect((await importInto(leaving.tenantId, mem0Export)).status).toBe(409);
    const docsOnly = (await (await exportOf(a.tenantId, docsAdmin)).text())
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((l) => JSON.parse(l));
    expect(docsOnly.length).toBeGreaterThan(0);
    expect(docsOnly.every((l) => l.type === "link" || l.project === "docs")).toBe(true);
    expect((await exportOf(a.tenantId, docsAdmin, "?project=me")).status).toBe(403);
    expect((await importInto(a.tenantId, mem0Export, "?project=me", docsAdmin)).status).toBe(403);
    // Records that name no project reach only the key's projects: a summary or a link onto chat-1 (project "me") is skipped.
    const header = JSON.stringify({ type: "header", format: "context-edge-export", version: 1 });
    const summary = JSON.stringify({
      type: "summary",
      conversation_id: "chat-1",
      version: 99,
      summary: "planted",
      importance_score: 0.5,
      message_count: 1,
      tokens_used: 1,
      token_limit: 100,
      created_at: 1,
    });
    const link = JSON.stringify({
      type: "link",
      id: "planted",
      source_type: "conversation",
      source_id: "chat-1",
      target_type: "conversation",
      target_id: "chat-1",
      relationship_type: "related",
      weight: 1,
      created_at: 1,
    });
    const planted = await (await importInto(a.tenantId, [header, summary, link].join("\n"), "", docsAdmin)).json<any>();
    expect(planted).toMatchObject({ imported: { summaries: 0, links: 0 }, skipped: { summaries: 1, links: 1 } });
  });

  it("streams a large tenant page by page", async () => {
    const t = await newTenant();
    for (let i = 0; i < 12; i++) {
      const key = (await newKey(t.tenantId)).apiKey;
      await call(key, "memory_batch_store", {
        namespace: "bulk",
        memories: Array.from({ length: 100 }, (_, j) => ({ content: `bulk memory ${i * 100 + j}` })),
      });
    }
    // Links page along their edge (links_edge): 1,100 of them, several pages, some sharing a source.
    const ids = (
      await t.db.prepare("SELECT id FROM items WHERE tenant_id = ? ORDER BY id").bind(t.tenantId).all<{ id: string }>()
    ).results.map((r) => r.id);
    const edges = Array.from({ length: 1100 }, (_, i) => [`rel_${i}`, ids[i % 600]!, ids[600 + (i % 550)]!]);
    await t.db
      .prepare(
        `INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at)
         SELECT j.value ->> 0, ?, 'item', j.value ->> 1, 'item', j.value ->> 2, 'related', 1, 0 FROM json_each(?) j`,
      )
      .bind(t.tenantId, JSON.stringify(edges))
      .run();
    const lines = (await (await exportOf(t.tenantId, undefined, "?project=bulk")).text()).trimEnd().split("\n");
    const records = lines.slice(1).map((l) => JSON.parse(l));
    expect(records.filter((r) => r.type === "item")).toHaveLength(1200);
    expect(new Set(records.filter((r) => r.type === "item").map((r) => r.id)).size).toBe(1200);
    const links = records.filter((r) => r.type === "link");
    expect(new Set(links.map((r) => r.id))).toEqual(new Set(edges.map(([id]) => id)));
    expect(lines).toHaveLength(1 + 1200 + 1100);
  });
});
