import type { TenantScope } from "../../db/scope";
import type { JsonModel, Services } from "../../ports";
import { foldName } from "../../shared/names";
import { writeItems } from "../memory/items";
import { type Asked, askWindow } from "./ask";
import { type ConsolidatingMemory, consolidate, type Decision } from "./consolidate";
import { DOCUMENT_SYSTEM_PROMPT, SYSTEM_PROMPT } from "./contract";
import { asWritten, decisionEvents, newItems, placedItems, provenance } from "./decision-writes";
import { type MemoryEvent, recordEvents } from "./events";
import { readExisting, storageKey } from "./known-memories";
import { readPromptKnowledge } from "./prompt-knowledge";
import { failedTryReason, nextTryAt } from "./retry-schedule";
import { turnRole, wordOf } from "./roles";
import {
  advanceCursor,
  type CommitGuard,
  placesStatement,
  racedError,
  recordWindow,
  type WindowPlace,
} from "./window-records";
import type { Window } from "./windows";

export type { WindowPlace };

/** What one window's extraction did and cost. */
export interface WindowOutcome {
  status: "done" | "failed" | "skipped";
  added: number;
  duplicates: number;
  superseded: number;
  dropped: number;
  calls: number;
  tokensIn: number;
  tokensOut: number;
  neurons: number;
  latencyMs: number;
}

/** A retry of a failed window: the tries it has had. */
export interface WindowRetry {
  attempts: number;
}

/**
 * Extracts one window: tells the model the keys the window's subjects hold, asks it (askWindow: cut answers split
 * the window), reads the answer memory by memory, keeps only what the sources' roles allow, decides in code what
 * each memory becomes (consolidate.ts), and writes the memories, their provenance, their places on their keys'
 * timelines, the decisions, the window's record and the cursor in one D1 batch, guarded so that only one job of the
 * conversation commits its turns (WindowRaced otherwise). A window already recorded is skipped; a window that
 * fails is recorded with its error and tried again later (retry-schedule.ts). Capacity and spent allocations are
 * thrown.
 */
export async function extractWindow(
  scope: TenantScope,
  services: Services,
  model: JsonModel,
  place: WindowPlace,
  window: Window,
  retry: WindowRetry | null = null,
): Promise<WindowOutcome> {
  const config = services.config.extraction;
  const knowledge = await readPromptKnowledge(scope, place.project, window);
  if (knowledge.seen && retry === null) {
    await advanceCursor(scope, place, window).run();
    return { ...NOTHING, status: "skipped" };
  }
  const system = place.document ? DOCUMENT_SYSTEM_PROMPT : SYSTEM_PROMPT;
  const asked = await askWindow(model, window, config.overlapTurns, config.maxOutputTokens, knowledge.known, system);
  const now = Date.now();
  const tries = (retry?.attempts ?? 0) + 1;
  if (asked.answer === null) return failWindow(scope, model, place, window, asked, retry, tries, now);

  const dropped: MemoryEvent[] = asked.answer.dropped.map((error) => droppedEvent(error));
  const accepted: ConsolidatingMemory[] = [];
  for (const memory of asked.answer.memories) {
    const named = knowledge.aliases.get(foldName(memory.subject));
    const subject = named ?? memory.subject;
    const mended = named ? [...memory.mended, `alias '${memory.subject}' read as ${named}`] : memory.mended;
    const word = wordOf(
      memory.kind,
      memory.sources.map((s) => turnRole(s.role)),
    );
    if ("refused" in word) {
      dropped.push(droppedEvent(`"${memory.text.slice(0, 60)}": ${word.refused}: memory dropped`, memory.sources));
      continue;
    }
    accepted.push({ ...memory, subject, mended, saidBy: word.saidBy });
  }
  for (const event of dropped) console.warn(`extraction window ${window.id}: ${event.error}`);

  const subjects = [...new Set(accepted.map((m) => m.subject))];
  const keys = accepted.flatMap((m) => storageKey(m.subject, m.key) ?? []);
  const { memories: existing, keyed } = await readExisting(scope, place.project, subjects, keys);
  const consolidation = consolidate(accepted, existing, keyed);
  const toWrite = newItems(consolidation.decisions, place.project);
  const guard: CommitGuard = {
    sources: [...new Set(accepted.flatMap((m) => m.sources.map((s) => s.id)))],
    ...(retry ? { attempts: retry.attempts } : {}),
  };
  const summary: { decisions: Decision[]; superseded: number } = { decisions: [], superseded: 0 };
  try {
    const written = await writeItems(
      scope,
      services,
      toWrite.map((w) => w.item),
      {
        alsoInBatch: (results) => {
          const { decisions, ids, resolve } = asWritten(consolidation, toWrite, results);
          const derivedIds = new Set([
            ...existing.map((e) => e.id),
            ...results.filter((r) => r.duplicateOf === null).map((r) => r.id),
          ]);
          const places = placedItems(consolidation.places, resolve, decisions);
          const events = decisionEvents(decisions, ids, consolidation.places, resolve);
          summary.decisions = decisions;
          summary.superseded = events.filter((e) => e.event === "superseded").length;
          const doneNote = retry ? [retriedEvent(tries)] : [];
          return [
            recordWindow(
              scope,
              place,
              window,
              model,
              asked,
              { status: "done", error: notes(dropped), retryAt: null },
              guard,
              now,
            ),
            ...provenance(scope, decisions, ids, existing, derivedIds),
            ...placesStatement(scope, places),
            ...recordEvents(scope, place, window.id, now, [...events, ...dropped, ...doneNote]),
            ...(retry ? [] : [advanceCursor(scope, place, window)]),
          ];
        },
      },
    );
    return {
      ...cost(asked),
      status: "done",
      added: written.filter((w) => w.duplicateOf === null).length,
      duplicates: summary.decisions.filter((d) => d.event === "duplicate").length,
      superseded: summary.superseded,
      dropped: dropped.length,
    };
  } catch (error) {
    throw racedError(error) ?? error;
  }
}

const NOTHING: WindowOutcome = {
  status: "done",
  added: 0,
  duplicates: 0,
  superseded: 0,
  dropped: 0,
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

/** A window whose answers broke twice, or whose endpoint refused it: recorded failed, with its next try. */
async function failWindow(
  scope: TenantScope,
  model: JsonModel,
  place: WindowPlace,
  window: Window,
  asked: Asked,
  retry: WindowRetry | null,
  tries: number,
  now: number,
): Promise<WindowOutcome> {
  const retryAt = nextTryAt(tries, now);
  const failed: MemoryEvent = {
    event: "failed",
    memoryId: null,
    key: null,
    sources: [],
    error: asked.error,
    reason: failedTryReason(tries, retryAt),
  };
  const guard: CommitGuard = { sources: [], ...(retry ? { attempts: retry.attempts } : {}) };
  try {
    await scope.d1.batch([
      recordWindow(scope, place, window, model, asked, { status: "failed", error: asked.error, retryAt }, guard, now),
      ...recordEvents(scope, place, window.id, now, [failed]),
      ...(retry ? [] : [advanceCursor(scope, place, window)]),
    ]);
  } catch (error) {
    throw racedError(error) ?? error;
  }
  return { ...NOTHING, ...cost(asked), status: "failed" };
}

function droppedEvent(error: string, sources: readonly { id: string }[] = []): MemoryEvent {
  return { event: "dropped", memoryId: null, key: null, sources: sources.map((s) => s.id), error };
}

function retriedEvent(tries: number): MemoryEvent {
  return {
    event: "retried",
    memoryId: null,
    key: null,
    sources: [],
    error: null,
    reason: `try ${tries} read the window`,
  };
}

function notes(dropped: readonly MemoryEvent[]): string | null {
  return dropped.length > 0
    ? dropped
        .map((d) => d.error)
        .join("; ")
        .slice(0, 2_000)
    : null;
}
