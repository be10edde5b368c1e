import type { TenantScope } from "../../db/scope";
import type { JsonModel } from "../../ports";
import type { Asked } from "./ask";
import type { Window } from "./windows";

/** What extraction reads: a conversation (its id), or a document (its id, with `document`). */
export interface TurnSource {
  conversationId: string;
  project: string;
  /** The turns are a document's chunks: `conversationId` is the document's id, its cursor in `documents`. */
  document?: boolean;
}

/** The table that holds a source's extraction cursor (extracted_count). */
export const cursorTable = (source: { document?: boolean }) => (source.document ? "documents" : "conversations");

/** Where a window's turns sit: the conversation, its project, and the extraction cursor around the window. */
export interface WindowPlace extends TurnSource {
  /** The conversation's extracted_count after this window (its last turn's position + 1). */
  extractedCount: number;
  /**
   * Where the cursor stood when the job read the window: the window commits only if it still stands there (another
   * job that read overlapping turns committed first otherwise). Null for a retry of a failed window, which the
   * cursor has passed.
   */
  cursorAt: number | null;
}

/**
 * How a window's commit is guarded, so that two jobs of one conversation never both commit: a new window, by the
 * cursor standing where it was read; a retried one, by its tries not having moved. Either way every source turn
 * the memories cite must still exist.
 */
export interface CommitGuard {
  sources: readonly string[];
  /** A retry: the tries the failed window had when this try read it. */
  attempts?: number;
}

/** A guarded commit lost: another job committed the window's turns first, or a source turn was deleted meanwhile. */
export class WindowRaced extends Error {}

/** Whether a failed batch failed on a window's guard (or its primary key): the window raced another job. */
export function racedError(error: unknown): WindowRaced | null {
  const text = String(error);
  return /NOT NULL constraint failed: extraction_windows\.status|UNIQUE constraint failed: extraction_windows\./.test(
    text,
  )
    ? new WindowRaced(
        `the window's turns were committed by another job, or a source turn is gone (${text.slice(0, 200)})`,
      )
    : null;
}

/**
 * The window's record, as the first statement of its batch. Its status is NULL (and the batch fails on the column's
 * NOT NULL) unless the guard holds: the conversation's cursor where the job read it, and every cited source there.
 */
export function recordWindow(
  scope: TenantScope,
  place: WindowPlace,
  window: Window,
  model: JsonModel,
  asked: Asked,
  outcome: { status: "done" | "failed"; error: string | null; retryAt: number | null },
  guard: CommitGuard,
  now: number,
): D1PreparedStatement {
  const sources = JSON.stringify(guard.sources);
  if (guard.attempts !== undefined) {
    return scope.d1
      .prepare(
        `UPDATE extraction_windows SET
           status = CASE WHEN attempts = ?3 AND status = 'failed'
             AND (SELECT COUNT(*) FROM items WHERE tenant_id = ?1 AND id IN (SELECT value FROM json_each(?4))) = json_array_length(?4)
             THEN ?5 END,
           attempts = attempts + 1, calls = calls + ?6, model = ?7, tokens_in = tokens_in + ?8, tokens_out = tokens_out + ?9,
           neurons = neurons + ?10, latency_ms = latency_ms + ?11, error = ?12, retry_at = ?13, created_at = ?14
         WHERE tenant_id = ?1 AND id = ?2`,
      )
      .bind(
        scope.tenantId,
        window.id,
        guard.attempts,
        sources,
        outcome.status,
        asked.calls,
        model.name,
        asked.tokensIn,
        asked.tokensOut,
        asked.neurons,
        asked.latencyMs,
        outcome.error,
        outcome.retryAt,
        now,
      );
  }
  return scope.d1
    .prepare(
      `INSERT INTO extraction_windows (tenant_id, id, project, conversation_id, first_position, last_position, status, calls,
         model, tokens_in, tokens_out, neurons, latency_ms, turns, error, created_at, attempts, retry_at, document_id)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6,
         (SELECT ?7 WHERE (SELECT extracted_count FROM ${cursorTable(place)} WHERE tenant_id = ?1 AND id = ?4) = ?17
           AND (SELECT COUNT(*) FROM items WHERE tenant_id = ?1 AND id IN (SELECT value FROM json_each(?18))) = json_array_length(?18)),
         ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 1, ?19, ?20)`,
    )
    .bind(
      scope.tenantId,
      window.id,
      place.project,
      place.conversationId,
      window.turns[0]!.position,
      window.turns[window.turns.length - 1]!.position,
      outcome.status,
      asked.calls,
      model.name,
      asked.tokensIn,
      asked.tokensOut,
      asked.neurons,
      asked.latencyMs,
      window.turns.length,
      outcome.error,
      now,
      place.cursorAt,
      sources,
      outcome.retryAt,
      place.document ? place.conversationId : null,
    );
}

/** The conversation's cursor past the window (never back: a late redelivery of an earlier window leaves it). */
export function advanceCursor(scope: TenantScope, place: WindowPlace, window: Window): D1PreparedStatement {
  if (place.document)
    return scope.d1
      .prepare("UPDATE documents SET extracted_count = ?3 WHERE tenant_id = ?1 AND id = ?2 AND extracted_count < ?3")
      .bind(scope.tenantId, place.conversationId, place.extractedCount);
  const tokens = window.turns.reduce((n, t) => n + t.tokens, 0);
  return scope.d1
    .prepare(
      `UPDATE conversations SET extracted_count = ?3, extracted_tokens = extracted_tokens + ?4
       WHERE tenant_id = ?1 AND id = ?2 AND extracted_count < ?3`,
    )
    .bind(scope.tenantId, place.conversationId, place.extractedCount, tokens);
}

/** Items' places on their keys' timelines: tier, valid_to and superseded_by, each id with its own. */
export function placesStatement(
  scope: TenantScope,
  places: readonly { id: string; tier: string; validTo: number | null; supersededBy: string | null }[],
): D1PreparedStatement[] {
  if (places.length === 0) return [];
  return [
    scope.d1
      .prepare(
        `UPDATE items SET
           tier = (SELECT p.value ->> 1 FROM json_each(?2) p WHERE p.value ->> 0 = items.id),
           valid_to = (SELECT p.value ->> 2 FROM json_each(?2) p WHERE p.value ->> 0 = items.id),
           superseded_by = (SELECT p.value ->> 3 FROM json_each(?2) p WHERE p.value ->> 0 = items.id)
         WHERE tenant_id = ?1 AND id IN (SELECT p.value ->> 0 FROM json_each(?2) p)`,
      )
      .bind(scope.tenantId, JSON.stringify(places.map((p) => [p.id, p.tier, p.validTo, p.supersededBy]))),
  ];
}
