import type { ToolCallRecord } from "../../messages";
import { boundedGroups } from "../../shared/bounded-groups";

const DAY_MS = 86_400_000;
/** Largest JSON parameter one statement takes (D1 allows 2 MB a value). */
const MAX_PARAMETER_CHARS = 1_000_000;

/** A tool's calls in one conversation, project and UTC day, as tool_conversation_days sums them. */
export interface ConversationDay {
  tenantId: string;
  tool: string;
  conversationId: string;
  project: string;
  day: number;
  calls: number;
  lastUsed: number;
}

/** Conversation days by their key, summed as calls arrive. */
export type ConversationDays = Map<string, ConversationDay>;

/** Adds a day's calls to `into`, summed with what it holds for the same key. */
export function addConversationDay(into: ConversationDays, row: ConversationDay): void {
  const key = JSON.stringify([row.tenantId, row.tool, row.conversationId, row.project, row.day]);
  const held = into.get(key);
  if (!held) into.set(key, { ...row });
  else {
    held.calls += row.calls;
    held.lastUsed = Math.max(held.lastUsed, row.lastUsed);
  }
}

/** Counts each call in the conversation its arguments name; a call that names none adds nothing. */
export function countConversationCalls(
  into: ConversationDays,
  calls: readonly { tenantId: string; call: ToolCallRecord }[],
): void {
  for (const { tenantId, call } of calls) {
    // A record from a worker that did not name conversations has no field at all.
    if (call.conversationId == null) continue;
    const at = call.startedAt;
    addConversationDay(into, {
      tenantId,
      tool: call.tool,
      conversationId: call.conversationId,
      project: call.project ?? "",
      day: at - (at % DAY_MS),
      calls: 1,
      lastUsed: at,
    });
  }
}

/** Sums the rows into tool_conversation_days: a new day's row inserted, an existing one added to. */
export function addConversationDays(d1: D1Database, rows: readonly ConversationDay[]): D1PreparedStatement[] {
  const values = rows.map((r) =>
    JSON.stringify([r.tenantId, r.tool, r.conversationId, r.project, r.day, r.calls, r.lastUsed]),
  );
  if (values.length === 0) return [];
  const insert = d1.prepare(
    `INSERT INTO tool_conversation_days (tenant_id, tool, conversation_id, project, day, calls, last_used)
     SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6
     FROM json_each(?) j WHERE true
     ON CONFLICT (tenant_id, tool, conversation_id, project, day) DO UPDATE SET
       calls = calls + excluded.calls, last_used = MAX(last_used, excluded.last_used)`,
  );
  const groups = boundedGroups(values, { count: Infinity, size: MAX_PARAMETER_CHARS }, (row) => row.length + 1);
  return groups.map((group) => insert.bind(`[${group.join(",")}]`));
}
