import type { TenantScope } from "../../db/scope";
import { foldName } from "../../shared/names";
import { JSON_CHARS_PER_STATEMENT } from "./chunk-rows";
import type { NewItem } from "./item-types";

/** An item as written by `insertItemRows`. */
export interface ItemRow {
  id: string;
  item: NewItem;
  hash: string;
  tokens: number;
  createdAt: number;
}

/**
 * Statements that insert items, bound as JSON arrays: one statement for a whole batch (log_chat's 50
 * messages, memory_batch_store's 100 memories) instead of one per item, so D1 runs and answers a few
 * statements. A message's position is its conversation's next position (past every position it ever gave, so
 * deleting the last turns frees none for reuse) plus the number of its
 * conversation's messages before it in the same statement: SQLite computes an INSERT's SELECT before
 * inserting any of its rows, so every row sees only the positions written before the statement.
 */
export function insertItemRows(scope: TenantScope, rows: readonly ItemRow[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  let group: string[] = [];
  let chars = 2;
  let turns = new Map<string, number>();
  const flush = () => {
    if (group.length > 0) statements.push(insertStatement(scope, `[${group.join(",")}]`));
    group = [];
    chars = 2;
    turns = new Map();
  };
  for (const row of rows) {
    let encoded = encodeItemRow(row, turns);
    // Offsets count within one statement: a row that starts a new statement is encoded again.
    if (group.length > 0 && chars + encoded.length + 1 > JSON_CHARS_PER_STATEMENT) {
      flush();
      encoded = encodeItemRow(row, turns);
    }
    const conversation = row.item.conversationId;
    if (conversation) turns.set(conversation, (turns.get(conversation) ?? 0) + 1);
    group.push(encoded);
    chars += encoded.length + 1;
  }
  flush();
  return statements;
}

function encodeItemRow({ id, item, hash, tokens, createdAt }: ItemRow, turns: ReadonlyMap<string, number>): string {
  return JSON.stringify([
    id,
    item.project,
    item.kind,
    item.type,
    item.conversationId ?? null,
    // A message's offset among the write's turns of its conversation; a chunk's place in its document.
    item.conversationId ? (turns.get(item.conversationId) ?? 0) : (item.document?.index ?? 0),
    item.role ?? null,
    item.content,
    JSON.stringify(item.tags ?? []),
    item.importance ?? 0.5,
    JSON.stringify(item.metadata ?? {}),
    item.tier ?? "active",
    item.taskId ?? null,
    item.filePath ?? null,
    item.lineStart ?? null,
    item.lineEnd ?? null,
    tokens,
    hash,
    createdAt,
    item.key ?? null,
    item.derived?.kind ?? null,
    item.derived?.subject ?? null,
    item.derived?.validFrom ?? null,
    item.derived ? JSON.stringify(item.derived.sources) : null,
    item.derived ? foldName(item.derived.subject) : null,
    item.derived?.saidBy ?? null,
    item.derived?.whenPrecision ?? null,
    item.document?.id ?? null,
    item.document?.page ?? null,
    item.document?.section ?? null,
  ]);
}

function insertStatement(scope: TenantScope, json: string): D1PreparedStatement {
  return scope.d1
    .prepare(
      `INSERT INTO items (id, tenant_id, project, kind, type, conversation_id, position, role, content, tags, importance, metadata, tier, task_id,
        file_path, line_start, line_end, tokens, content_hash, created_at, touched_at, key, memory_kind, subject, valid_from,
        sources, subject_key, said_by, when_precision, document_id, document_page, document_section)
       SELECT j.value ->> 0, ?1, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4,
         CASE WHEN j.value ->> 4 IS NULL THEN (CASE WHEN j.value ->> 27 IS NULL THEN NULL ELSE j.value ->> 5 END)
              ELSE MAX((SELECT COALESCE(MAX(position), -1) + 1 FROM items WHERE tenant_id = ?1 AND conversation_id = j.value ->> 4),
                       COALESCE((SELECT next_position FROM conversations WHERE tenant_id = ?1 AND id = j.value ->> 4), 0)) + (j.value ->> 5) END,
         j.value ->> 6, j.value ->> 7, j.value ->> 8, j.value ->> 9, j.value ->> 10, j.value ->> 11, j.value ->> 12, j.value ->> 13,
         j.value ->> 14, j.value ->> 15, j.value ->> 16, j.value ->> 17, j.value ->> 18, j.value ->> 18, j.value ->> 19,
         j.value ->> 20, j.value ->> 21, j.value ->> 22, j.value ->> 23, j.value ->> 24, j.value ->> 25, j.value ->> 26,
         j.value ->> 27, j.value ->> 28, j.value ->> 29
       FROM json_each(?2) j`,
    )
    .bind(scope.tenantId, json);
}

/** What one write adds to a conversation. */
export interface ConversationDelta {
  id: string;
  project: string;
  messages: number;
  tokens: number;
  /** The first message's time (a new conversation's created_at) and the latest. */
  firstAt: number;
  lastAt: number;
  /** Where the conversation is extracted: when a job should have read what this write adds (null: not extracted). */
  extractDueAt?: number | null;
}

export type ConversationCounters = {
  id: string;
  project: string;
  extracted_tokens: number;
  message_count: number;
  tokens: number;
  summarized_count: number;
  summarized_tokens: number;
};

/**
 * One statement that creates or advances the conversations a write appends to, returning each one's
 * counters after the write (auto-summarize reads them).
 */
export function upsertConversations(scope: TenantScope, deltas: readonly ConversationDelta[]): D1PreparedStatement {
  return scope.d1
    .prepare(
      `INSERT INTO conversations (tenant_id, id, project, message_count, tokens, created_at, updated_at, next_position,
         extract_due_at)
       SELECT ?1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5,
         (SELECT COALESCE(MAX(position), -1) + 1 FROM items WHERE tenant_id = ?1 AND conversation_id = j.value ->> 0),
         j.value ->> 6
       FROM json_each(?2) j WHERE true
       ON CONFLICT (tenant_id, id) DO UPDATE SET message_count = message_count + excluded.message_count, tokens = tokens + excluded.tokens,
         updated_at = MAX(updated_at, excluded.updated_at), next_position = MAX(next_position, excluded.next_position),
         extract_due_at = COALESCE(extract_due_at, excluded.extract_due_at)
       RETURNING id, project, message_count, tokens, summarized_count, summarized_tokens, extracted_tokens`,
    )
    .bind(
      scope.tenantId,
      JSON.stringify(
        deltas.map((d) => [d.id, d.project, d.messages, d.tokens, d.firstAt, d.lastAt, d.extractDueAt ?? null]),
      ),
    );
}
