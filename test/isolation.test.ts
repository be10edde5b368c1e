import { beforeAll, describe, expect, it } from "vitest";
import { admin, call, moveTenant, newKey, newTenant, type TestTenant, tenantDb, waitForEmbeddings } from "./helpers";
import {
  exampleObject,
  KeyPool,
  listTools,
  type Outcome,
  PROJECT_NAMES,
  runCalls,
  runOne,
  show,
  type ToolCall,
  type ToolInfo,
} from "./registry-cases";

// Registry-driven isolation matrix (issue 9): tenant A creates one of everything in projects p1 and p2;
// tenant B, a key of A limited to p1 and a read-only key of A call every tool with A's p2 ids, names and
// project. Nothing of A's p2 may come back to B or the p1 key, nothing of A may change, and the
// read-only key is refused every writing tool.

const QUERY_WORD = "quokka"; // occurs only in A's p2 data
const P2_MARKER = "zqxsecretp2"; // in every p2 text, never sent in any argument
const P1_WORD = "wallaby";

interface P2Ids {
  items: string[];
  memories: string[];
  documentId: string;
  messageId: string;
  chunks: number[];
  /** A chunk of the p2 document, linked to a p2 message by store_context_links. */
  linkedChunk: number;
  linkIds: string[];
  snapshotId: string;
}

/** Read tools that, given A's p2 ids, must show p2 data to A's own unrestricted key (else the matrix aims at nothing). */
const CONTROL_TOOLS = [
  "get_context",
  "get_context_links_for_message",
  "get_document_relationships",
  "get_messages_for_chunk",
  "get_related_contexts",
  "get_tool_conversations",
  "retrieve_context",
  "search",
];

const CONVERSATIONS = { p1: ["chat-p1", "thread-p1"], p2: ["chat-p2", "thread-p2"] } as const;

async function rows<T = Record<string, unknown>>(db: D1Database, sql: string, ...params: unknown[]): Promise<T[]> {
  return (
    await db
      .prepare(sql)
      .bind(...params)
      .all<T>()
  ).results;
}

/** One of everything in a project, through the tools themselves. */
async function createAll(keys: KeyPool, project: "p1" | "p2"): Promise<{ snapshotId: string }> {
  const word = project === "p2" ? `${QUERY_WORD} ${P2_MARKER}` : P1_WORD;
  const [chat, thread] = CONVERSATIONS[project];
  const key = () => keys.take();
  const m1 = await call(await key(), "memory_store", {
    content: `${project} memory one about ${word}`,
    namespace: project,
  });
  await call(await key(), "memory_store", {
    content: `${project} memory two stashme about ${word}`,
    namespace: project,
  });
  const doc = await call(await key(), "store_memory", {
    file_name: `${project}.md`,
    content: `${project} document about ${word}`,
    project_id: project,
  });
  const msg = await call(await key(), "log_chat", {
    conversation_id: chat,
    role: "user",
    content: `${project} question about ${word}`,
    project_id: project,
  });
  await call(await key(), "log_chat", {
    conversation_id: chat,
    role: "assistant",
    content: `${project} answer about ${word}`,
    project_id: project,
  });
  await call(await key(), "log_chat", {
    conversation_id: thread,
    role: "user",
    content: `${project} follow-up about ${word}`,
    project_id: project,
  });
  await call(await key(), "link_resources", {
    source_id: m1.id,
    target_id: doc.resource_id,
    relationship_type: "references",
  });
  await call(await key(), "add_relationship", {
    sourceContextId: chat,
    targetContextId: thread,
    relationshipType: "continues",
  });
  const docChunks = await rows<{ id: number }>(
    await tenantDb(keys.tenantId),
    "SELECT id FROM chunks WHERE item_id = ?",
    doc.resource_id,
  );
  await call(await key(), "store_context_links", { message_id: msg.message_id, chunk_ids: docChunks.map((c) => c.id) });
  await call(await key(), "summarize_context", { contextId: chat });
  await call(await key(), "context_set_current_task", { project_id: project, task_id: `task-${project}` });
  const snapshot = await call(await key(), "context_create_task_snapshot", {
    project_id: project,
    name: `snap-${project}`,
  });
  await call(await key(), "context_stash", { project_id: project, query: "stashme" });
  await call(await key(), "memory_context_build", {
    query: project === "p2" ? QUERY_WORD : P1_WORD,
    token_budget: 1000,
    namespace: project,
    min_similarity: 0,
  });
  return { snapshotId: snapshot.snapshot_id };
}

async function collectP2Ids(tenantId: string, snapshotId: string): Promise<P2Ids> {
  const db = await tenantDb(tenantId);
  const items = await rows<{ id: string; kind: string }>(
    db,
    "SELECT id, kind FROM items WHERE tenant_id = ? AND project = 'p2' ORDER BY created_at, id",
    tenantId,
  );
  const chunks = await rows<{ id: number; item_id: string }>(
    db,
    "SELECT c.id, c.item_id FROM chunks c JOIN items i ON i.id = c.item_id WHERE i.tenant_id = ? AND i.project = 'p2' ORDER BY c.id",
    tenantId,
  );
  const ids = items.map((i) => i.id);
  const links = await rows<{ id: string }>(
    db,
    "SELECT id FROM links WHERE tenant_id = ?1 AND (source_id IN (SELECT value FROM json_each(?2)) OR target_id IN (SELECT value FROM json_each(?2)) OR source_id IN ('chat-p2', 'thread-p2'))",
    tenantId,
    JSON.stringify(ids),
  );
  const of = (kind: string) => items.filter((i) => i.kind === kind).map((i) => i.id);
  return {
    items: ids,
    memories: of("memory"),
    documentId: of("document")[0]!,
    messageId: of("message")[0]!,
    chunks: chunks.map((c) => c.id),
    linkedChunk: chunks.find((c) => c.item_id === of("document")[0])!.id,
    linkIds: links.map((l) => l.id),
    snapshotId,
  };
}

/** Per-table fingerprint of a tenant's records (background-only columns left out); cache rows only for p2. */
async function fingerprint(tenantId: string, withCache: boolean): Promise<Record<string, string>> {
  const tables: Record<string, string> = {
    items:
      "SELECT id, project, kind, type, conversation_id, position, role, content, tags, importance, metadata, tier, pinned, task_id, file_path, tokens, content_hash, generation, gc_survival_count FROM items WHERE tenant_id = ? ORDER BY id",
    chunks: "SELECT id, item_id, chunk_index, content FROM chunks WHERE tenant_id = ? ORDER BY id",
    conversations:
      "SELECT id, project, message_count, tokens, updated_at FROM conversations WHERE tenant_id = ? ORDER BY id",
    links:
      "SELECT id, source_type, source_id, target_type, target_id, relationship_type, weight FROM links WHERE tenant_id = ? ORDER BY id",
    summaries:
      "SELECT conversation_id, version, summary FROM summaries WHERE tenant_id = ? ORDER BY conversation_id, version",
    project_tasks:
      "SELECT project, current_task_id, previous_task_id FROM project_tasks WHERE tenant_id = ? ORDER BY project",
  };
  if (withCache)
    tables.cache_entries_p2 =
      "SELECT key, project, generation, query FROM cache_entries WHERE tenant_id = ? AND project = 'p2' ORDER BY key";
  const db = await tenantDb(tenantId);
  const out: Record<string, string> = {};
  for (const [name, sql] of Object.entries(tables)) out[name] = JSON.stringify(await rows(db, sql, tenantId));
  return out;
}

function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys(before).filter((k) => before[k] !== after[k]);
}

/** Waits until the embed / auto-link / auto-summary jobs have settled, so a fingerprint only moves for a call. */
async function settle(tenantId: string): Promise<void> {
  await waitForEmbeddings(tenantId);
  let last = "";
  for (let i = 0; i < 60; i++) {
    const now = JSON.stringify(await fingerprint(tenantId, true));
    const unlinked = (
      await rows<{ n: number }>(
        await tenantDb(tenantId),
        "SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND linked_at IS NULL",
        tenantId,
      )
    )[0]!.n;
    if (now === last && unlinked === 0) return;
    last = now;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Argument values by parameter name: everything points at A's p2. */
function p2Value(name: string, ids: P2Ids): unknown {
  if (PROJECT_NAMES.includes(name)) return "p2";
  if (["contextId", "conversation_id", "session_id", "sourceContextId"].includes(name)) return "chat-p2";
  if (name === "targetContextId") return "thread-p2";
  if (name === "source_id") return ids.memories[0];
  if (name === "target_id" || name === "document_id") return ids.documentId;
  if (name === "message_id") return ids.messageId;
  if (name === "chunk_id") return ids.linkedChunk;
  if (name === "chunk_ids") return ids.chunks.slice(0, 100);
  if (name === "segment_ids") return ids.items;
  if (name === "task_id") return "task-p2";
  if (name === "query" || name === "pattern") return QUERY_WORD;
  if (name === "tool_name") return "log_chat";
  if (name === "doc_type") return "note";
  if (name === "relationship_types") return ["references", "continues"];
  if (name === "content" || name === "message") return "intruder text";
  if (name === "min_similarity") return 0;
  if (name === "token_budget") return 4000;
  return undefined;
}

/** Each tool with every p2 value; without its optional project (the key's default); and by the p2 snapshot tag. */
function callsFor(tool: ToolInfo, ids: P2Ids): ToolCall[] {
  const full = exampleObject(tool.schema, (name) => p2Value(name, ids));
  const calls: ToolCall[] = [{ name: tool.name, args: full }];
  const optionalProjects = PROJECT_NAMES.filter((p) => p in full && !tool.schema.required?.includes(p));
  if (optionalProjects.length > 0) {
    const without = { ...full };
    for (const p of optionalProjects) delete without[p];
    calls.push({ name: tool.name, args: without });
  }
  if (tool.schema.properties?.filters) {
    const { query: _q, ...rest } = full;
    calls.push({ name: tool.name, args: { ...rest, filters: { tags: [`snapshot:${ids.snapshotId}`] } } });
  }
  return calls;
}

/** What of A's p2 an answer shows that the caller did not send: the marker, item/link ids, chunk ids, conversation names. */
function leaksIn(o: Outcome, args: unknown, ids: P2Ids, conversationsAreSecret: boolean): string[] {
  const sent = JSON.stringify(args);
  const found: string[] = [];
  if (o.text.includes(P2_MARKER)) found.push("p2 content");
  const names = [...ids.items, ...ids.linkIds, ...(conversationsAreSecret ? CONVERSATIONS.p2 : [])];
  for (const id of names) if (o.text.includes(id) && !sent.includes(id)) found.push(`id ${id}`);
  const sentNumbers = new Set(JSON.stringify(args).match(/\d+/g) ?? []);
  const walk = (value: unknown, key: string) => {
    if (Array.isArray(value)) value.forEach((v) => walk(v, key));
    else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, k);
    else if (
      typeof value === "number" &&
      /chunk/i.test(key) &&
      ids.chunks.includes(value) &&
      !sentNumbers.has(String(value))
    )
      found.push(`chunk ${value}`);
  };
  walk(o.value, "");
  return found;
}

describe("isolation matrix", () => {
  let tools: ToolInfo[];
  let a: TestTenant;
  let aKeys: KeyPool;
  let ids: P2Ids;
  const totals = { calls: 0, refusals: 0, leaks: 0, controls: 0 };

  beforeAll(async () => {
    tools = await listTools();
    a = await newTenant();
    aKeys = new KeyPool(a.tenantId);
    await createAll(aKeys, "p1");
    await call(await aKeys.take(), "add_message", {
      contextId: "chat-default",
      message: `default message ${P1_WORD}`,
      role: "user",
    });
    const { snapshotId } = await createAll(aKeys, "p2");
    await settle(a.tenantId);
    ids = await collectP2Ids(a.tenantId, snapshotId);
    expect(ids.chunks.length).toBeGreaterThan(3);
    expect(ids.linkIds.length).toBeGreaterThan(0);
  }, 90_000);

  async function runMatrix(
    label: string,
    keys: KeyPool,
    check: (c: ToolCall, o: Outcome, tool: ToolInfo) => string[],
    withCache: boolean,
  ): Promise<string[]> {
    const failures: string[] = [];
    const before = await fingerprint(a.tenantId, withCache);
    const calls = tools.flatMap((t) => callsFor(t, ids).map((c) => ({ call: c, tool: t })));
    const outcomes = await runCalls(
      "jsonrpc",
      keys,
      calls.map((c) => c.call),
    );
    calls.forEach(({ call: c, tool }, i) => {
      const o = outcomes[i]!;
      totals.calls++;
      if (o.kind !== "result") totals.refusals++;
      if (o.kind === "internal")
        failures.push(`${label} ${c.name} ${show(c.args, 160)}: internal error ${o.message.slice(0, 100)}`);
      for (const problem of check(c, o, tool)) failures.push(`${label} ${c.name} ${show(c.args, 160)}: ${problem}`);
    });
    await settle(a.tenantId);
    const changed = changedTables(before, await fingerprint(a.tenantId, withCache));
    if (changed.length > 0) failures.push(`${label}: tenant A's records changed: ${changed.join(", ")}`);
    return failures;
  }

  const leakCheck = (conversationsAreSecret: boolean) => (c: ToolCall, o: Outcome) => {
    const leaks = leaksIn(o, c.args, ids, conversationsAreSecret);
    totals.leaks += leaks.length;
    return leaks.map((l) => `leaked ${l}`);
  };

  it("tenant B, on another shard or on A's own, sees and changes nothing of A, whatever A's ids it sends", async () => {
    const elsewhere = a.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0";
    let b = await newTenant();
    if (b.shard !== elsewhere) b = await moveTenant(b, elsewhere);
    expect(await runMatrix("tenant B (other shard)", new KeyPool(b.tenantId), leakCheck(false), true)).toEqual([]);
    let c = await newTenant();
    if (c.shard !== a.shard) c = await moveTenant(c, a.shard);
    expect(c.shard).toBe(a.shard);
    expect(await runMatrix("tenant C (same shard)", new KeyPool(c.tenantId), leakCheck(false), true)).toEqual([]);
  }, 120_000);

  it("a key limited to p1 sees and changes nothing of p2", async () => {
    expect(await runMatrix("p1 key", new KeyPool(a.tenantId, { projects: ["p1"] }), leakCheck(true), true)).toEqual([]);
  }, 60_000);

  it("a read-only key is refused every writing tool and changes nothing; its reads reach p2 (the matrix's control)", async () => {
    const reaching = new Set<string>();
    const check = (c: ToolCall, o: Outcome, tool: ToolInfo) => {
      // A's own key may read p2: what it sees proves the same calls by B and the p1 key aimed at real p2 data.
      if (leaksIn(o, c.args, ids, true).length > 0) reaching.add(tool.name);
      return !tool.readOnly && o.appCode !== "PERMISSION_DENIED"
        ? [`writing tool not refused with PERMISSION_DENIED (${o.kind} ${o.appCode ?? o.code ?? ""})`]
        : [];
    };
    expect(await runMatrix("read-only key", new KeyPool(a.tenantId, { scopes: ["read"] }), check, false)).toEqual([]);
    totals.controls = reaching.size;
    expect([...reaching].sort(), "tools whose p2 arguments reach p2 data with A's own key").toEqual(
      expect.arrayContaining(CONTROL_TOOLS),
    );
  }, 60_000);

  it("log_chat into p2's conversation under project p1 is a CONFLICT and writes nothing", async () => {
    const before = await fingerprint(a.tenantId, true);
    const keys = new KeyPool(a.tenantId, { projects: ["p1"] });
    const o = await runOne("jsonrpc", keys, {
      name: "log_chat",
      args: { conversation_id: "chat-p2", role: "user", content: "injected", project_id: "p1" },
    });
    await settle(a.tenantId);
    expect(
      { kind: o.kind, code: o.appCode, changed: changedTables(before, await fingerprint(a.tenantId, true)) },
      o.text,
    ).toEqual({ kind: "refused", code: "CONFLICT", changed: [] });
  }, 30_000);

  it("an admin key limited to p1 cannot mint or revoke keys beyond its own projects", async () => {
    const limitedAdmin = await newKey(a.tenantId, { scopes: ["read", "write", "admin"], projects: ["p1"] });
    const writer = await newKey(a.tenantId, { scopes: ["read", "write"], projects: ["p1"] });
    const path = `/tenants/${a.tenantId}/keys`;
    const attempts: [string, unknown, string][] = [
      ["projects null", { name: "x", scopes: ["read", "write", "admin"], projects: null }, limitedAdmin.apiKey],
      ["projects omitted", { name: "x", scopes: ["read"] }, limitedAdmin.apiKey],
      ['projects ["p2"]', { name: "x", scopes: ["read"], projects: ["p2"] }, limitedAdmin.apiKey],
      ['projects ["p1","p2"]', { name: "x", scopes: ["read"], projects: ["p1", "p2"] }, limitedAdmin.apiKey],
      ["write key creating an admin key", { name: "x", scopes: ["admin"], projects: ["p1"] }, writer.apiKey],
    ];
    const wrong: string[] = [];
    for (const [label, body, token] of attempts) {
      const response = await admin("POST", path, body, token);
      if (response.status < 400 || response.status >= 500)
        wrong.push(`${label}: HTTP ${response.status} ${(await response.text()).slice(0, 120)}`);
    }
    const revoke = await admin("DELETE", `/keys/${a.keyId}`, undefined, limitedAdmin.apiKey);
    if (revoke.status < 400 || revoke.status >= 500) wrong.push(`revoking the unrestricted key: HTTP ${revoke.status}`);
    const within = await admin("POST", path, { name: "ok", scopes: ["read"], projects: ["p1"] }, limitedAdmin.apiKey);
    expect(wrong).toEqual([]);
    expect(within.status, "a key within its own projects may still be created").toBe(201);
  });

  it("summary", () => {
    console.log(
      `isolation: ${totals.calls} calls over ${tools.length} tools x 3 callers: ${totals.refusals} refusals, ${totals.leaks} leaks (control: ${totals.controls} tools show p2 data to A's own read-only key)`,
    );
  });
});
