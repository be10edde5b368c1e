import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { NewItem } from "../src/core/memory/item-types";
import { writeItems } from "../src/core/memory/items";
import { importedIdMaker } from "../src/core/ownership/import-records";
import { tenantScope } from "../src/db/scope";
import type { Env } from "../src/env";
import { buildServices } from "../src/services";
import { call, moveTenant, newTenant, normalisedExport, request, type TestTenant, tenantDb } from "./helpers";

// Derived memories travel whole: an export imported into another tenant, and a tenant moved to another shard, keep
// each memory's kind, subject, validity, sources and history, the extraction log, the project's settings and each
// conversation's cursor. Extraction runs with the offline rule-based model (LLM=local, the `extraction` project).

const DAY = "2023-05-08T13:56:00.000Z";
const at = (minutes: number) => new Date(Date.parse(DAY) + minutes * 60_000).toISOString();
const PROJECT = "life";
const CHAT = "chat";

/** Turns of a conversation; turn 1 is the assistant's, which the local rules leave alone. */
const FIRST_TURNS = [
  { role: "user", speaker: "Caroline", content: "I live in Boston.", timestamp: at(0) },
  {
    role: "assistant",
    speaker: "Assistant",
    content: "How was the pottery class you took in April? You said you are allergic to cats.",
    timestamp: at(1),
  },
  { role: "user", speaker: "Caroline", content: "My favorite color is green.", timestamp: at(2) },
];
const LATER_TURN = { role: "user", speaker: "Caroline", content: "I moved to Denver.", timestamp: at(60) };

/** Until `windows` windows of the conversation are recorded (the real queue consumer extracts them). */
async function untilWindows(t: Pick<TestTenant, "tenantId">, windows: number): Promise<void> {
  await expect
    .poll(
      async () =>
        (await (
          await tenantDb(t.tenantId)
        )
          .prepare("SELECT COUNT(*) AS n FROM extraction_windows WHERE tenant_id = ? AND conversation_id = ?")
          .bind(t.tenantId, CHAT)
          .first<number>("n"))!,
      { timeout: 20_000, interval: 100 },
    )
    .toBe(windows);
}

/**
 * A tenant whose project "life" has a profile of Caroline with four entries: her home city (Denver, which
 * superseded Boston: history), her favourite colour (both extracted from her turns, in two windows), and two
 * memories of the assistant's turn (an event known to the month, a fact said by the assistant), written as
 * extraction writes a memory (writeItems with `derived`) with their provenance rows and events, since the local
 * rules leave the assistant's turns alone and set neither said_by nor when_precision.
 */
async function tenantWithMemories(): Promise<{ t: TestTenant; turns: string[] }> {
  const t = await newTenant();
  await call(t.apiKey, "memory_settings", { project_id: PROJECT, default_subject: "Caroline" });
  const first = await call(t.apiKey, "memory_ingest", {
    conversation_id: CHAT,
    project_id: PROJECT,
    messages: FIRST_TURNS,
  });
  await untilWindows(t, 1);
  const later = await call(t.apiKey, "memory_ingest", {
    conversation_id: CHAT,
    project_id: PROJECT,
    messages: [LATER_TURN],
  });
  await untilWindows(t, 2);
  const turns: string[] = [...first.ids, ...later.ids];

  const scope = tenantScope(t.db, t.tenantId);
  const services = buildServices(env as unknown as Env, t.db, { tenantIndex: null }, () => {});
  const assistantTurn = turns[1]!;
  const derived = (content: string, fields: Partial<NonNullable<NewItem["derived"]>>): NewItem => ({
    project: PROJECT,
    kind: "memory",
    type: "note",
    content,
    derived: { kind: "fact", subject: "Caroline", validFrom: Date.parse(at(1)), sources: [assistantTurn], ...fields },
  });
  const now = Date.now();
  await writeItems(
    scope,
    services,
    [
      derived("Caroline took a pottery class.", {
        kind: "event",
        validFrom: Date.UTC(2023, 3, 1),
        whenPrecision: "month",
      }),
      derived("Caroline is allergic to cats.", { saidBy: "assistant" }),
    ],
    {
      alsoInBatch: (written) => [
        t.db
          .prepare("INSERT INTO memory_sources (tenant_id, source_id, memory_id) SELECT ?, ?, value FROM json_each(?)")
          .bind(t.tenantId, assistantTurn, JSON.stringify(written.map((w) => w.id))),
        t.db
          .prepare(
            `INSERT INTO memory_events (tenant_id, id, project, at, event, memory_id, conversation_id, sources, reason)
             SELECT ?1, 'hand-' || j.key, ?2, ?3, 'added', j.value, ?4, ?5, 'said by the assistant' FROM json_each(?6) j`,
          )
          .bind(
            t.tenantId,
            PROJECT,
            now,
            CHAT,
            JSON.stringify([assistantTurn]),
            JSON.stringify(written.map((w) => w.id)),
          ),
      ],
    },
  );
  await call(t.apiKey, "memory_settings", { project_id: PROJECT, subject_aliases: { Caro: "Caroline" } });
  return { t, turns };
}

/** What a client sees of the derived memories, with every id as the tenant names it. */
async function seen(t: TestTenant) {
  const db = await tenantDb(t.tenantId);
  const rows = (table: string, columns: string, order: string) =>
    db.prepare(`SELECT ${columns} FROM ${table} WHERE tenant_id = ? ORDER BY ${order}`).bind(t.tenantId).all();
  return {
    profile: await call(t.apiKey, "memory_profile", { subject: "Caroline", project_id: PROJECT }),
    history: (await call(t.apiKey, "memory_history", { conversation_id: CHAT })).events,
    keyHistory: (await call(t.apiKey, "memory_history", { key: "caroline.home_city", project_id: PROJECT })).events,
    memories: (
      await rows(
        "items",
        "content, memory_kind, subject, subject_key, key, tier, valid_from, valid_to, superseded_by, said_by, when_precision, sources",
        "content",
      )
    ).results.filter((r: any) => r.memory_kind !== null),
    provenance: (await rows("memory_sources", "source_id, memory_id", "source_id, memory_id")).results,
    cursor: await cursorOf(t),
    settings: await call(t.apiKey, "memory_settings", { project_id: PROJECT }),
    aliases: await db
      .prepare("SELECT subject_aliases FROM project_settings WHERE tenant_id = ? AND project = ?")
      .bind(t.tenantId, PROJECT)
      .first("subject_aliases"),
  };
}

async function cursorOf(t: Pick<TestTenant, "tenantId">) {
  return (await tenantDb(t.tenantId))
    .prepare(
      "SELECT extracted_count, extracted_tokens, next_position, extraction_epoch, message_count FROM conversations WHERE tenant_id = ? AND id = ?",
    )
    .bind(t.tenantId, CHAT)
    .first();
}

/** Ids as an import names them are the source's with a suffix: taken out, a copy reads as its original. */
const withoutSuffix = (value: unknown) => JSON.parse(JSON.stringify(value).replace(/~[0-9a-f]{8}/g, ""));

const admin = (method: string, path: string, body?: string) =>
  request(`/admin${path}`, { method, headers: { authorization: "Bearer test-admin-token" }, body });

/** A long turn (a window's worth of tokens) that extraction reads at once; only its first sentence says anything. */
const LONG_TURN = `I'm a nurse.${" We talked for a while about the weather, the garden and the week ahead.".repeat(90)}`;

/** The conversation's windows as [first, last] position, in order. */
async function windowsOf(t: Pick<TestTenant, "tenantId">): Promise<number[][]> {
  const { results } = await (await tenantDb(t.tenantId))
    .prepare(
      "SELECT first_position, last_position FROM extraction_windows WHERE tenant_id = ? AND conversation_id = ? ORDER BY 1, 2",
    )
    .bind(t.tenantId, CHAT)
    .all<{ first_position: number; last_position: number }>();
  return results.map((w) => [w.first_position, w.last_position]);
}

/**
 * A later log_chat is read from the cursor on: one new window of the new turn alone, whose decisions rest on it
 * alone; no turn below the cursor is read again (read from the start, they would make a window of their own).
 */
async function extractsFromTheCursor(t: TestTenant, position: number): Promise<void> {
  const windows = await windowsOf(t);
  const { memories, history } = await seen(t);
  const logged = await call(t.apiKey, "log_chat", {
    conversation_id: CHAT,
    project_id: PROJECT,
    role: "user",
    agent_name: "Caroline",
    content: LONG_TURN,
  });
  // Polled in storage: a tool call a poll would spend the key's rate limit.
  await expect
    .poll(async () => cursorOf(t), { timeout: 20_000, interval: 100 })
    .toMatchObject({ extracted_count: position + 1, next_position: position + 1 });
  expect(await windowsOf(t)).toEqual([...windows, [position, position]]);
  const after = await seen(t);
  const decided = after.history.slice(history.length);
  expect(decided.map((e: any) => [e.event, e.sources])).toEqual([["added", [logged.message_id]]]);
  expect(after.memories.filter((m: any) => !memories.some((b: any) => b.content === m.content))).toMatchObject([
    { content: "Caroline is a nurse.", sources: JSON.stringify([logged.message_id]) },
  ]);
}

/** Deleting the assistant's turn deletes the two memories derived only from it, and their provenance. */
async function deletingTheTurnCascades(t: TestTenant, turn: string): Promise<void> {
  const pruned = await call(t.apiKey, "context_gc_prune", {
    project_id: PROJECT,
    segment_ids: [turn],
    action: "delete",
    confirm: true,
  });
  expect(pruned.pruned_segments).toEqual([turn]);
  const left = await seen(t);
  expect(left.memories.map((m: any) => m.content).sort()).toEqual([
    "Caroline lives in Boston.",
    "Caroline moved to Denver.",
    "Caroline's favorite color is green.",
  ]);
  expect(left.provenance.some((r: any) => r.source_id === turn)).toBe(false);
  expect(left.profile.facts.map((f: any) => f.text)).toEqual(["Caroline moved to Denver."]);
  expect(left.profile.events).toEqual([]);
}

describe("derived memories travel whole", () => {
  it("an export imported into another tenant keeps the profile, history, sources, cascade and cursor", async () => {
    const { t: a, turns } = await tenantWithMemories();
    const before = await seen(a);
    expect(before.profile.facts.map((f: any) => f.text).sort()).toEqual([
      "Caroline is allergic to cats.",
      "Caroline moved to Denver.",
    ]);
    expect(before.profile.preferences.map((f: any) => f.text)).toEqual(["Caroline's favorite color is green."]);
    expect(before.profile.events.map((f: any) => [f.text, f.valid_from])).toEqual([
      ["Caroline took a pottery class.", "2023-04-01T00:00:00.000Z"],
    ]);
    expect(before.keyHistory.map((e: any) => e.event)).toEqual(["added", "added", "superseded"]);
    expect(before.cursor).toMatchObject({ extracted_count: 4, next_position: 4, message_count: 4 });

    const exported = await (await admin("GET", `/tenants/${a.tenantId}/export`)).text();
    const lines = exported
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ type: "header", version: 3 });
    const types = new Set(lines.map((l) => l.type));
    for (const type of ["project_settings", "extraction_window", "memory_event"]) expect(types).toContain(type);
    expect(lines.find((l) => l.content === "Caroline is allergic to cats.")).toMatchObject({
      memory_kind: "fact",
      subject: "Caroline",
      said_by: "assistant",
      when_precision: null,
      sources: [turns[1]],
    });
    expect(lines.find((l) => l.content === "Caroline lives in Boston.")).toMatchObject({
      tier: "superseded",
      key: "caroline.home_city",
      valid_to: expect.any(Number),
      superseded_by: lines.find((l) => l.content === "Caroline moved to Denver.").id,
    });
    expect(lines.find((l) => l.type === "conversation")).toMatchObject({ extracted_count: 4, next_position: 4 });
    // memory_ingest keeps a turn's speaker in its chunk's context only: the line names it.
    expect(lines.find((l) => l.id === turns[0])).toMatchObject({ role: "user", speaker: "Caroline" });
    // An export of another project holds none of this project's settings, windows or events.
    const elsewhere = await (await admin("GET", `/tenants/${a.tenantId}/export?project=elsewhere`)).text();
    expect(elsewhere.trimEnd().split("\n")).toHaveLength(1);

    const b = await newTenant();
    const response = await admin("POST", `/tenants/${b.tenantId}/import`, exported);
    expect(response.status).toBe(200);
    const summary = await response.json<any>();
    expect(summary.imported).toMatchObject({
      items: lines.filter((l) => l.type === "item").length,
      project_settings: 1,
      extraction_windows: 2,
      memory_events: lines.filter((l) => l.type === "memory_event").length,
    });

    // The same profile, history, sources (remapped), provenance rows, settings and cursor.
    const copy = await seen(b);
    expect(withoutSuffix(copy)).toEqual(before);
    expect(copy.profile.facts[0].id).toMatch(/~[0-9a-f]{8}$/);
    expect(copy.memories.find((m: any) => m.content === "Caroline took a pottery class.")).toMatchObject({
      when_precision: "month",
      subject_key: "caroline",
    });
    // Exporting the copy gives the original's lines.
    const again = await (await admin("GET", `/tenants/${b.tenantId}/export`)).text();
    expect(normalisedExport(again, b.tenantId)).toEqual(normalisedExport(exported, a.tenantId));

    // Importing it again adds nothing.
    const twice = await (await admin("POST", `/tenants/${b.tenantId}/import`, exported)).json<any>();
    expect(twice.imported).toMatchObject({ items: 0, project_settings: 0, extraction_windows: 0, memory_events: 0 });
    expect(withoutSuffix(await seen(b))).toEqual(before);

    await deletingTheTurnCascades(b, (await importedIdMaker(b.tenantId))(turns[1]!));
    await extractsFromTheCursor(b, 4);
  });

  it("a tenant moved to another shard keeps them: profile, history, sources, cascade and cursor", async () => {
    const { t, turns } = await tenantWithMemories();
    const before = await seen(t);
    const moved = await moveTenant(t, t.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0");
    expect(await seen(moved)).toEqual(before);
    await deletingTheTurnCascades(moved, turns[1]!);
    await extractsFromTheCursor(moved, 4);
  });
});
