import { remainingQueries } from "../../db/invocation-queries";
import type { TenantScope } from "../../db/scope";
import { ModelError } from "../../errors";
import { PLATFORM_LIMITS } from "../../platform-limits";
import type { Services } from "../../ports";
import { neuronsSpentStatement, tenantLimits, utcDayStart } from "../tenants/quotas";
import { recordEvents } from "./events";
import { extractWindow, type WindowOutcome } from "./extract-window";
import { dueStatement, notDueStatement } from "./extraction-due";
import { retryWindow } from "./retry-window";
import { cursorTable, type TurnSource, WindowRaced } from "./window-records";
import { cutWindows, readTurns, TURNS_PER_READ, windowOf } from "./windows";

export interface ExtractionJob {
  /** The conversation's id, or the document's when `document`. */
  conversationId: string;
  /** Read a document's chunks (memory_ingest_document with extract: true), its cursor in `documents`. */
  document?: boolean;
  /** Extract the last, shorter window too (the conversation has gone quiet, or was ingested whole). */
  flush: boolean;
  /** Extract even where the project's setting says no (memory_ingest with extract: true). */
  force?: boolean;
  /** Try this failed window of the conversation again instead (retry-window.ts). */
  retryWindow?: string;
}

export type ExtractionRun =
  /** Nothing to do: no model in this deployment, the project does not extract, or the conversation is gone. */
  | { state: "off" }
  /** The daily model budget or the provider's allocation is spent: the job waits until it resets. */
  | { state: "deferred"; reason: string; delaySeconds: number }
  | {
      state: "done";
      windows: WindowOutcome[];
      /** Run again (now, or after delaySeconds with flush) for what this run left. */
      again: { flush: boolean; delaySeconds: number } | null;
    };

/**
 * D1 queries a window takes, a batch's statements each (what the prompt knows 3, the consolidation read 2, the write's
 * reads 2, and its batch: items, chunks and their keyword rows, the cache generation, the window's record,
 * provenance, timeline places, events and the cursor); a window of a few memories takes 19.
 */
const QUERIES_PER_WINDOW = 24;
/** D1 queries an extract job takes to run its first window: the conversation's reads (4), its turns', and the window. */
export const EXTRACT_JOB_QUERIES = QUERIES_PER_WINDOW + 6;

/**
 * Extracts a conversation's turns past its cursor (conversations.extracted_count), window by window, while the
 * invocation has D1 queries for one more and the tenant's daily model budget holds. A last window that could still
 * grow waits for a later flush unless `flush` says to take it now. A window another job committed first ends the
 * run, to be read again from where that job left the cursor. The conversation's extract_due_at says when a job
 * should next have read it, for the minute pass to re-send a lost one.
 */
export async function runExtraction(
  scope: TenantScope,
  services: Services,
  job: ExtractionJob,
): Promise<ExtractionRun> {
  const model = services.model;
  if (model === null) return { state: "off" };
  const config = services.config.extraction;
  const now = Date.now();
  const document = job.document === true;
  const [conversation, setting, spent] = await scope.d1.batch<Record<string, number | string | null>>([
    scope.d1
      .prepare(
        document
          ? `SELECT project, extracted_count, extraction_epoch, extract_due_at, extract FROM documents
             WHERE tenant_id = ? AND id = ? AND status = 'ready'`
          : "SELECT project, extracted_count, extraction_epoch, extract_due_at FROM conversations WHERE tenant_id = ? AND id = ?",
      )
      .bind(scope.tenantId, job.conversationId),
    scope.d1
      .prepare(
        `SELECT extract FROM project_settings
         WHERE tenant_id = ?1 AND project = (SELECT project FROM ${cursorTable({ document })} WHERE tenant_id = ?1 AND id = ?2)`,
      )
      .bind(scope.tenantId, job.conversationId),
    neuronsSpentStatement(scope.d1, scope.tenantId, now),
  ]);
  const row = conversation!.results[0] as
    | {
        project: string;
        extracted_count: number;
        extraction_epoch: number;
        extract_due_at: number | null;
        extract?: number;
      }
    | undefined;
  if (!row) return { state: "off" };
  const own = setting!.results[0] as { extract: number | null } | undefined;
  // A document is read only when its ingest asked (its own flag); a conversation as its project says.
  const extracts = document ? row.extract === 1 : own?.extract == null ? config.byDefault : own.extract === 1;
  const place = { project: row.project, conversationId: job.conversationId, document };
  if (!extracts && !job.force && !job.retryWindow) {
    if (row.extract_due_at !== null) await notDueStatement(scope, job.conversationId, document).run();
    return { state: "off" };
  }
  const budget = tenantLimits(services.config.quotas, scope.quotas).extraction_neurons_per_day;
  let neurons = (spent!.results[0] as { n: number }).n;
  if (budget !== null && neurons >= budget)
    return defer(scope, place, now, `the tenant's daily model budget of ${budget} neurons is spent`);
  if (job.retryWindow) {
    const outcome = await runWindowGuarded(scope, place, now, () =>
      retryWindow(scope, services, model, place, job.retryWindow!),
    );
    return "state" in outcome ? outcome : { state: "done", windows: outcome.windows, again: null };
  }

  const { context, turns } = await readTurns(
    scope,
    job.conversationId,
    row.extracted_count,
    config.overlapTurns,
    undefined,
    document,
  );
  const { windows, lastComplete } = cutWindows(turns, config.windowTokens, job.flush);
  const ready = lastComplete ? windows : windows.slice(0, -1);
  const outcomes: WindowOutcome[] = [];
  const reader = { model: model.name, epoch: row.extraction_epoch };
  let before = context;
  let cursorAt = row.extracted_count;
  let raced = false;
  // What a window takes, at least the bound, or the most a window of this run took.
  let perWindow = QUERIES_PER_WINDOW;
  for (const [i, turnsOfWindow] of ready.entries()) {
    if (i > 0 && remainingQueries() < perWindow) break;
    if (budget !== null && neurons >= budget) break;
    const window = await windowOf(
      scope.tenantId,
      job.conversationId,
      turnsOfWindow,
      before,
      config.overlapTurns,
      reader,
    );
    const extractedCount = turnsOfWindow[turnsOfWindow.length - 1]!.position + 1;
    const left = remainingQueries();
    const ran = await runWindowGuarded(scope, place, now, () =>
      extractWindow(scope, services, model, { ...place, extractedCount, cursorAt }, window),
    );
    perWindow = Math.max(perWindow, left - remainingQueries());
    if ("state" in ran) return ran;
    if (ran.raced) {
      raced = true;
      break;
    }
    outcomes.push(ran.windows[0]!);
    neurons += ran.windows[0]!.neurons;
    before = [...before, ...turnsOfWindow];
    cursorAt = extractedCount;
  }
  // Windows left for lack of queries or budget, a read that stopped at its limit, or a race lost: again now. A last
  // window that could still grow: again once the conversation has had a minute to go on.
  const again =
    raced || outcomes.length < ready.length || (lastComplete && turns.length >= TURNS_PER_READ)
      ? { flush: job.flush, delaySeconds: 0 }
      : !lastComplete
        ? { flush: true, delaySeconds: config.idleSeconds }
        : null;
  const expected = again === null ? null : now + again.delaySeconds * 1000;
  await dueStatement(scope, job.conversationId, expected, document).run();
  return { state: "done", windows: outcomes, again };
}

/** Runs a window, turning a spent provider allocation into a deferral and a lost race into `raced`. */
async function runWindowGuarded(
  scope: TenantScope,
  place: TurnSource,
  now: number,
  run: () => Promise<WindowOutcome | null>,
): Promise<ExtractionRun | { windows: WindowOutcome[]; raced: boolean }> {
  try {
    const outcome = await run();
    return { windows: outcome ? [outcome] : [], raced: false };
  } catch (error) {
    if (error instanceof WindowRaced) {
      console.warn(`extraction of ${place.conversationId}: ${error.message}; reading again`);
      return { windows: [], raced: true };
    }
    if (error instanceof ModelError && error.kind === "quota")
      return defer(scope, place, now, `the model provider's allocation is spent (${error.message.slice(0, 200)})`);
    throw error;
  }
}

/** Records why extraction waits, and until when: 00:00 UTC, when budgets and the free allocation reset. */
async function defer(scope: TenantScope, place: TurnSource, now: number, reason: string): Promise<ExtractionRun> {
  const resumes = utcDayStart(now) + 86_400_000;
  const message = `extraction waits until ${new Date(resumes).toISOString()}: ${reason}; nothing is dropped`;
  await scope.d1.batch([
    ...recordEvents(scope, place, null, now, [
      { event: "deferred", memoryId: null, key: null, sources: [], error: message },
    ]),
    dueStatement(scope, place.conversationId, resumes, place.document),
  ]);
  const delaySeconds = Math.min(PLATFORM_LIMITS.queues.maxDelaySeconds, Math.ceil((resumes - now) / 1000) + 60);
  return { state: "deferred", reason: message, delaySeconds };
}
