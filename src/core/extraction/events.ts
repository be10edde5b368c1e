import { projectClause, type TenantScope } from "../../db/scope";

/**
 * What extraction decided, one record each: a memory added, one superseded by a later memory of its key, a
 * duplicate that added nothing but its sources, a window that failed (or a try of it), a ref or memory the contract
 * refused (dropped), a window put off (deferred: the daily model budget or the provider's allocation is spent), a
 * failed window read again and done (retried), a conversation read again (reextract).
 */
export const EVENT_KINDS = [
  "added",
  "superseded",
  "duplicate",
  "failed",
  "dropped",
  "deferred",
  "retried",
  "reextract",
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export interface MemoryEvent {
  event: EventKind;
  memoryId: string | null;
  key: string | null;
  /** Source item ids. */
  sources: string[];
  error: string | null;
  /** For a superseded memory: the one that replaced it. */
  supersededBy?: string;
  /** Why, in words: which guard kept two memories apart, why a value is history, when a failed window is tried next. */
  reason?: string | null;
}

/** Events of one window (or of none, for a deferral) in one statement. */
export function recordEvents(
  scope: TenantScope,
  place: { project: string; conversationId: string | null; document?: boolean },
  windowId: string | null,
  at: number,
  events: readonly MemoryEvent[],
): D1PreparedStatement[] {
  if (events.length === 0) return [];
  const rows = events.map((e, i) => [
    // The index padded, so that ids of one instant sort in the window's order (moves copy in id order).
    `${at.toString(36)}-${i.toString(36).padStart(4, "0")}-${crypto.randomUUID().slice(0, 8)}`,
    e.event,
    e.memoryId,
    e.key,
    JSON.stringify(e.sources),
    e.supersededBy ?? null,
    e.error,
    e.reason ?? null,
  ]);
  return [
    scope.d1
      .prepare(
        `INSERT INTO memory_events (tenant_id, id, project, at, event, memory_id, key, conversation_id, window_id, sources,
           superseded_by, error, reason, document_id)
         SELECT ?1, j.value ->> 0, ?2, ?3, j.value ->> 1, j.value ->> 2, j.value ->> 3, ?4, ?5, j.value ->> 4, j.value ->> 5,
           j.value ->> 6, j.value ->> 7, ?7
         FROM json_each(?6) j`,
      )
      .bind(
        scope.tenantId,
        place.project,
        at,
        place.document ? null : place.conversationId,
        windowId,
        JSON.stringify(rows),
        place.document ? place.conversationId : null,
      ),
  ];
}

/** An event as memory_history answers it, with its window's model and cost. */
export interface HistoryEvent {
  event: string;
  memoryId: string | null;
  key: string | null;
  sources: string[];
  conversationId: string | null;
  documentId: string | null;
  windowId: string | null;
  model: string | null;
  tokensIn: number | null;
  tokensOut: number | null;
  neurons: number | null;
  latencyMs: number | null;
  at: number;
  supersededBy: string | null;
  error: string | null;
  reason: string | null;
}

/** Which events to read: a memory's, a key's (in a project), a conversation's or a document's. */
export type HistoryTarget =
  | { memoryId: string }
  | { key: string; project: string }
  | { conversationId: string }
  | { documentId: string };

/** Most events one read answers, newest last. */
export const HISTORY_LIMIT = 200;

/** A memory's, key's, conversation's or document's events in time order, the newest HISTORY_LIMIT; the scope's
 * projects only. */
export async function readHistory(scope: TenantScope, target: HistoryTarget): Promise<HistoryEvent[]> {
  const visible = projectClause(scope, "e.project");
  const [where, params] =
    "memoryId" in target
      ? ["e.memory_id = ?", [target.memoryId]]
      : "key" in target
        ? ["e.project = ? AND e.key = ?", [target.project, target.key]]
        : "documentId" in target
          ? ["e.document_id = ?", [target.documentId]]
          : ["e.conversation_id = ?", [target.conversationId]];
  const { results } = await scope.d1
    .prepare(
      `SELECT * FROM (
         SELECT e.event, e.memory_id, e.key, e.sources, e.conversation_id, e.document_id, e.window_id, e.at, e.superseded_by, e.error, e.reason,
           e.rowid AS seq,
           w.model, w.tokens_in, w.tokens_out, w.neurons, w.latency_ms
         FROM memory_events e
         LEFT JOIN extraction_windows w ON w.tenant_id = e.tenant_id AND w.id = e.window_id
         WHERE e.tenant_id = ? AND ${where}${visible.sql}
         ORDER BY e.at DESC, e.rowid DESC LIMIT ?)
       ORDER BY at, seq`,
    )
    .bind(scope.tenantId, ...params, ...visible.params, HISTORY_LIMIT)
    .all<{
      event: string;
      memory_id: string | null;
      key: string | null;
      sources: string;
      conversation_id: string | null;
      document_id: string | null;
      window_id: string | null;
      at: number;
      superseded_by: string | null;
      error: string | null;
      reason: string | null;
      model: string | null;
      tokens_in: number | null;
      tokens_out: number | null;
      neurons: number | null;
      latency_ms: number | null;
    }>();
  return results.map((r) => ({
    event: r.event,
    memoryId: r.memory_id,
    key: r.key,
    sources: JSON.parse(r.sources) as string[],
    conversationId: r.conversation_id,
    documentId: r.document_id,
    windowId: r.window_id,
    model: r.model,
    tokensIn: r.tokens_in,
    tokensOut: r.tokens_out,
    neurons: r.neurons,
    latencyMs: r.latency_ms,
    at: r.at,
    supersededBy: r.superseded_by,
    error: r.error,
    reason: r.reason,
  }));
}
