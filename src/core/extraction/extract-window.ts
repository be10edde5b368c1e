import type { TenantScope } from "../../db/scope";
import { ModelError } from "../../errors";
import type { JsonModel, Services } from "../../ports";
import { setSourcesStatement } from "../memory/derived";
import type { NewItem } from "../memory/item-types";
import { writeItems } from "../memory/items";
import { AnswerError, readAnswer, type ValidMemory } from "./answer";
import { consolidate, type Decision, readExisting, storageKey } from "./consolidate";
import { ANSWER_SCHEMA, ANSWER_SCHEMA_NAME, extractionPrompt, SYSTEM_PROMPT } from "./contract";
import { type MemoryEvent, recordEvents } from "./events";
import { promptTurns, type Window } from "./windows";

/** What one window's extraction did and cost. */
export interface WindowOutcome {
  status: "done" | "failed" | "skipped";
  added: number;
  duplicates: number;
  superseded: number;
  calls: number;
  tokensIn: number;
  tokensOut: number;
  neurons: number;
  latencyMs: number;
}

/** Where a window's turns sit: the conversation, its project, and its extraction cursor once the window is read. */
export interface WindowPlace {
  conversationId: string;
  project: string;
  /** The conversation's extracted_count after this window (its last turn's position + 1). */
  extractedCount: number;
}

interface Asked {
  /** The answer read against the contract; null when both answers broke it. */
  answer: ReturnType<typeof readAnswer> | null;
  error: string | null;
  calls: number;
  tokensIn: number;
  tokensOut: number;
  neurons: number;
  latencyMs: number;
}

/**
 * Extracts one window: asks the model (once more with the validation error if the answer breaks the contract),
 * decides in code what each memory becomes (consolidate.ts), and writes the memories, their provenance, the
 * decisions, the window's record and the conversation's cursor in one D1 batch. A window already recorded is
 * skipped, so a redelivered job adds nothing. An answer that fails twice is recorded as failed, with its error;
 * the turns stay stored and searchable. Model errors other than a broken answer (capacity, quota) are thrown.
 */
export async function extractWindow(
  scope: TenantScope,
  services: Services,
  model: JsonModel,
  place: WindowPlace,
  window: Window,
): Promise<WindowOutcome> {
  const seen = await scope.d1
    .prepare("SELECT status FROM extraction_windows WHERE tenant_id = ? AND id = ?")
    .bind(scope.tenantId, window.id)
    .first<{ status: string }>();
  if (seen) {
    await advanceCursor(scope, place, window).run();
    return { ...NOTHING, status: "skipped" };
  }
  const asked = await ask(model, window, services.config.extraction.maxOutputTokens);
  const now = Date.now();
  const parsed = asked.answer;
  if (parsed === null) {
    const failed: MemoryEvent = { event: "failed", memoryId: null, key: null, sources: [], error: asked.error };
    await scope.d1.batch([
      recordWindow(scope, place, window, model, asked, "failed", asked.error, now),
      ...recordEvents(scope, place, window.id, now, [failed]),
      advanceCursor(scope, place, window),
    ]);
    return { ...cost(asked), status: "failed", added: 0, duplicates: 0, superseded: 0 };
  }
  for (const note of parsed.dropped) console.warn(`extraction window ${window.id}: ${note}`);

  const subjects = [...new Set(parsed.memories.map((m) => m.subject))];
  const { memories: existing, keyHolders } = await readExisting(
    scope,
    place.project,
    subjects,
    keysOf(parsed.memories),
  );
  const decisions = consolidate(parsed.memories, existing, keyHolders);
  const toWrite = newItems(decisions, place.project);
  const dropped: MemoryEvent[] = parsed.dropped.map((error) => ({
    event: "dropped",
    memoryId: null,
    key: null,
    sources: [],
    error,
  }));
  const notes = parsed.dropped.length > 0 ? parsed.dropped.join("; ").slice(0, 2_000) : null;
  const written = await writeItems(
    scope,
    services,
    toWrite.map((w) => w.item),
    {
      alsoInBatch: (results) => {
        const ids = decisions.map((_, i) => {
          const at = toWrite.findIndex((w) => w.decision === i);
          return at >= 0 ? results[at]!.id : null;
        });
        // The same text under the same key as an item stored as given (memory_store): the write adds nothing, and
        // the decision is a duplicate of that item, which keeps no sources.
        const effective = decisions.map((d, i): Decision => {
          const at = toWrite.findIndex((w) => w.decision === i);
          const same = at >= 0 ? results[at]!.duplicateOf : null;
          return same === null ? d : { event: "duplicate", memory: d.memory, of: { id: same } };
        });
        const written = results.filter((r) => r.duplicateOf === null).map((r) => r.id);
        const derivedIds = new Set([...existing.map((e) => e.id), ...written]);
        return [
          recordWindow(scope, place, window, model, asked, "done", notes, now),
          ...provenance(scope, effective, ids, existing, derivedIds),
          ...recordEvents(scope, place, window.id, now, [...decisionEvents(effective, ids), ...dropped]),
          advanceCursor(scope, place, window),
        ];
      },
    },
  );
  const added = written.filter((w) => w.duplicateOf === null).length;
  return {
    ...cost(asked),
    status: "done",
    added,
    duplicates: decisions.filter((d) => d.event === "duplicate").length,
    superseded: decisions.reduce(
      (n, d) => n + (d.event === "added" ? d.supersedes.length + (d.supersedesDecision === null ? 0 : 1) : 0),
      0,
    ),
  };
}

const NOTHING: WindowOutcome = {
  status: "done",
  added: 0,
  duplicates: 0,
  superseded: 0,
  calls: 0,
  tokensIn: 0,
  tokensOut: 0,
  neurons: 0,
  latencyMs: 0,
};

function cost(asked: Asked) {
  return {
    calls: asked.calls,
    tokensIn: asked.tokensIn,
    tokensOut: asked.tokensOut,
    neurons: asked.neurons,
    latencyMs: asked.latencyMs,
  };
}

/** The model's answer, asked a second time with the validation error when the first breaks the contract. */
async function ask(model: JsonModel, window: Window, maxTokens: number): Promise<Asked> {
  const { context, turns } = promptTurns(window);
  const prompt = extractionPrompt(context, turns);
  const asked: Asked = { answer: null, error: null, calls: 0, tokensIn: 0, tokensOut: 0, neurons: 0, latencyMs: 0 };
  let retryNote = "";
  for (let attempt = 1; attempt <= 2; attempt++) {
    const started = Date.now();
    try {
      asked.calls++;
      const answer = await model.generate({
        system: SYSTEM_PROMPT,
        prompt: prompt + retryNote,
        schema: ANSWER_SCHEMA,
        schemaName: ANSWER_SCHEMA_NAME,
        maxTokens,
      });
      asked.tokensIn += answer.tokensIn;
      asked.tokensOut += answer.tokensOut;
      asked.neurons += answer.neurons;
      asked.answer = readAnswer(answer.content, window);
      asked.error = null;
      return asked;
    } catch (error) {
      const broken = error instanceof AnswerError || (error instanceof ModelError && error.kind === "output");
      if (!broken) throw error;
      asked.error = [asked.error, `answer ${attempt}: ${(error as Error).message}`.slice(0, 500)]
        .filter(Boolean)
        .join("; ");
      retryNote = `\n\nYour previous answer was refused: ${(error as Error).message} Answer again with JSON only, matching the schema.`;
    } finally {
      asked.latencyMs += Date.now() - started;
    }
  }
  return asked;
}

function keysOf(memories: readonly ValidMemory[]): string[] {
  return memories.flatMap((m) => storageKey(m.subject, m.key) ?? []);
}

/** The items the added memories become (a duplicate of one added in this window lends it its sources). */
function newItems(decisions: readonly Decision[], project: string): { decision: number; item: NewItem }[] {
  const extraSources = new Map<number, string[]>();
  decisions.forEach((d) => {
    if (d.event === "duplicate" && "decision" in d.of)
      extraSources.set(d.of.decision, [
        ...(extraSources.get(d.of.decision) ?? []),
        ...d.memory.sources.map((s) => s.id),
      ]);
  });
  return decisions.flatMap((d, i) => {
    if (d.event !== "added") return [];
    const m = d.memory;
    const sources = [...new Set([...m.sources.map((s) => s.id), ...(extraSources.get(i) ?? [])])];
    const item: NewItem = {
      project,
      kind: "memory",
      type: m.kind === "task" ? "task" : "note",
      content: m.text,
      key: d.storageKey,
      derived: {
        kind: m.kind,
        subject: m.subject,
        validFrom: m.when ?? Math.min(...m.sources.map((s) => s.createdAt)),
        sources,
      },
    };
    return [{ decision: i, item }];
  });
}

/** Each memory's sources indexed by source, and an existing memory's sources grown by its duplicate's. */
function provenance(
  scope: TenantScope,
  decisions: readonly Decision[],
  ids: readonly (string | null)[],
  existing: readonly { id: string; sources: string[] }[],
  derivedIds: ReadonlySet<string>,
): D1PreparedStatement[] {
  const pairs: [string, string][] = [];
  const grown = new Map<string, Set<string>>();
  decisions.forEach((d, i) => {
    const sources = d.memory.sources.map((s) => s.id);
    const memoryId = d.event === "added" ? ids[i]! : "id" in d.of ? d.of.id : ids[d.of.decision]!;
    // Only a derived memory has sources: an item stored as given never goes with a turn.
    if (!derivedIds.has(memoryId)) return;
    for (const source of sources) pairs.push([source, memoryId]);
    if (d.event === "duplicate" && "id" in d.of) {
      const of = d.of.id;
      const current = grown.get(of) ?? new Set(existing.find((e) => e.id === of)?.sources ?? []);
      for (const source of sources) current.add(source);
      grown.set(of, current);
    }
  });
  const statements: D1PreparedStatement[] = [];
  if (pairs.length > 0) {
    statements.push(
      scope.d1
        .prepare(
          `INSERT OR IGNORE INTO memory_sources (tenant_id, source_id, memory_id)
           SELECT ?1, j.value ->> 0, j.value ->> 1 FROM json_each(?2) j`,
        )
        .bind(scope.tenantId, JSON.stringify(pairs)),
    );
  }
  if (grown.size > 0) {
    statements.push(
      setSourcesStatement(
        scope,
        [...grown].map(([id, sources]) => ({ id, sources })),
      ),
    );
  }
  return statements;
}

function decisionEvents(decisions: readonly Decision[], ids: readonly (string | null)[]): MemoryEvent[] {
  return decisions.flatMap((d, i): MemoryEvent[] => {
    const sources = d.memory.sources.map((s) => s.id);
    if (d.event === "duplicate") {
      const memoryId = "id" in d.of ? d.of.id : ids[d.of.decision]!;
      return [{ event: "duplicate", memoryId, key: null, sources, error: null }];
    }
    const replaced = [...d.supersedes, ...(d.supersedesDecision === null ? [] : [ids[d.supersedesDecision]!])];
    return [
      { event: "added", memoryId: ids[i]!, key: d.storageKey, sources, error: null },
      ...replaced.map(
        (old): MemoryEvent => ({
          event: "superseded",
          memoryId: old,
          key: d.storageKey,
          sources,
          error: null,
          supersededBy: ids[i]!,
        }),
      ),
    ];
  });
}

function recordWindow(
  scope: TenantScope,
  place: WindowPlace,
  window: Window,
  model: JsonModel,
  asked: Asked,
  status: "done" | "failed",
  error: string | null,
  now: number,
): D1PreparedStatement {
  return scope.d1
    .prepare(
      `INSERT INTO extraction_windows (tenant_id, id, project, conversation_id, first_position, last_position, status, calls,
         model, tokens_in, tokens_out, neurons, latency_ms, turns, error, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)`,
    )
    .bind(
      scope.tenantId,
      window.id,
      place.project,
      place.conversationId,
      window.turns[0]!.position,
      window.turns[window.turns.length - 1]!.position,
      status,
      asked.calls,
      model.name,
      asked.tokensIn,
      asked.tokensOut,
      asked.neurons,
      asked.latencyMs,
      window.turns.length,
      error,
      now,
    );
}

/** The conversation's cursor past the window (never back: a late redelivery of an earlier window leaves it). */
function advanceCursor(scope: TenantScope, place: WindowPlace, window: Window): D1PreparedStatement {
  const tokens = window.turns.reduce((n, t) => n + t.tokens, 0);
  return scope.d1
    .prepare(
      `UPDATE conversations SET extracted_count = ?3, extracted_tokens = extracted_tokens + ?4
       WHERE tenant_id = ?1 AND id = ?2 AND extracted_count < ?3`,
    )
    .bind(scope.tenantId, place.conversationId, place.extractedCount, tokens);
}
