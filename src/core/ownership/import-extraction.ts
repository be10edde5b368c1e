import type { TenantScope } from "../../db/scope";
import { boundedGroups } from "../../shared/bounded-groups";
import { foldName } from "../../shared/names";
import { storedAliases } from "../extraction/prompt-knowledge";
import { JSON_CHARS_PER_STATEMENT } from "../memory/chunk-rows";
import type { ImportRecords, ItemRecord } from "./import-schemas";

// What an import writes of extraction: derived memories' own columns and provenance, project settings, windows and
// events, each item id remapped as the import remaps it.

/**
 * A derived memory's columns (null for every other item), in the order the import's item insert reads them:
 * memory_kind, subject, subject_key, valid_from, valid_to, said_by, when_precision, sources. Tier, valid_to and
 * superseded_by come from the file as they are, so a key's timeline is the one exported, whatever order the
 * items arrive in.
 */
export function derivedColumns(item: ItemRecord, newId: (id: string) => string): unknown[] {
  const derived = item.memory_kind !== null;
  return [
    item.memory_kind,
    derived ? item.subject! : null,
    derived ? foldName(item.subject!) : null,
    item.valid_from,
    item.valid_to,
    derived ? (item.said_by ?? null) : null,
    derived ? (item.when_precision ?? null) : null,
    derived ? JSON.stringify(item.sources!.map(newId)) : null,
  ];
}

/**
 * memory_sources rows of the derived memories a page writes (source, memory), in the page's batch: the deletion
 * cascade finds a memory by its source turns there.
 */
export function provenanceStatements(scope: TenantScope, pairs: readonly [string, string][]): D1PreparedStatement[] {
  return jsonGroups(pairs).map((json) =>
    scope.d1
      .prepare(
        `INSERT OR IGNORE INTO memory_sources (tenant_id, source_id, memory_id)
         SELECT ?1, j.value ->> 0, j.value ->> 1 FROM json_each(?2) j`,
      )
      .bind(scope.tenantId, json),
  );
}

/**
 * Statements that write the file's project settings, extraction windows and memory events, by kind of record; a row
 * already there (same project, or same id) is left as it is. Window and event ids are unique within a tenant only,
 * so they keep their ids; the item ids an event names are remapped.
 */
export function extractionStatements(
  scope: TenantScope,
  records: ImportRecords,
  newId: (id: string) => string,
  projectOf: (project: string) => string,
): Record<"project_settings" | "extraction_windows" | "memory_events", D1PreparedStatement[]> {
  const settings = records.projectSettings.map((s) => [
    projectOf(s.project),
    s.extract === null ? null : s.extract ? 1 : 0,
    s.default_subject,
    s.subject_aliases === null || Object.keys(s.subject_aliases).length === 0
      ? null
      : JSON.stringify(storedAliases(s.subject_aliases)),
    s.updated_at,
  ]);
  // A document's window names the document in both columns, under the copy's id.
  const windows = records.extractionWindows.map((w) => [
    w.id,
    projectOf(w.project),
    w.document_id === null ? w.conversation_id : newId(w.document_id),
    w.first_position,
    w.last_position,
    w.status,
    w.calls,
    w.model,
    w.tokens_in,
    w.tokens_out,
    w.neurons,
    w.latency_ms,
    w.turns,
    w.error,
    w.created_at,
    w.attempts,
    w.retry_at,
    w.document_id === null ? null : newId(w.document_id),
  ]);
  const events = records.memoryEvents.map((e) => [
    e.id,
    projectOf(e.project),
    e.at,
    e.event,
    e.memory_id === null ? null : newId(e.memory_id),
    e.key,
    e.conversation_id,
    e.window_id,
    JSON.stringify(e.sources.map(newId)),
    e.superseded_by === null ? null : newId(e.superseded_by),
    e.error,
    e.reason,
    e.document_id === null ? null : newId(e.document_id),
  ]);
  const insert = (sql: string) => (json: string) => scope.d1.prepare(sql).bind(scope.tenantId, json);
  return {
    project_settings: jsonGroups(settings).map(
      insert(
        `INSERT OR IGNORE INTO project_settings (tenant_id, project, extract, default_subject, subject_aliases, updated_at)
         SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4 FROM json_each(?2) j`,
      ),
    ),
    extraction_windows: jsonGroups(windows).map(
      insert(
        `INSERT OR IGNORE INTO extraction_windows (tenant_id, id, project, conversation_id, first_position, last_position,
           status, calls, model, tokens_in, tokens_out, neurons, latency_ms, turns, error, created_at, attempts, retry_at,
           document_id)
         SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6,
           j.value ->> 7, j.value ->> 8, j.value ->> 9, j.value ->> 10, j.value ->> 11, j.value ->> 12, j.value ->> 13,
           j.value ->> 14, j.value ->> 15, j.value ->> 16, j.value ->> 17
         FROM json_each(?2) j`,
      ),
    ),
    // In the file's order, so events of one instant keep their order (memory_history breaks ties by insertion).
    memory_events: jsonGroups(events).map(
      insert(
        `INSERT OR IGNORE INTO memory_events (tenant_id, id, project, at, event, memory_id, key, conversation_id, window_id,
           sources, superseded_by, error, reason, document_id)
         SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6,
           j.value ->> 7, j.value ->> 8, j.value ->> 9, j.value ->> 10, j.value ->> 11, j.value ->> 12
         FROM json_each(?2) j ORDER BY j.key`,
      ),
    ),
  };
}

/** Rows as JSON arrays of at most JSON_CHARS_PER_STATEMENT characters each (D1's bound value limit). */
function jsonGroups(rows: readonly unknown[]): string[] {
  const encoded = rows.map((row) => JSON.stringify(row));
  return boundedGroups(
    encoded,
    { count: Number.POSITIVE_INFINITY, size: JSON_CHARS_PER_STATEMENT - 2 },
    (row) => row.length + 1,
  ).map((group) => `[${group.join(",")}]`);
}
