import { addUnits, type BillableUnits, noUnits } from "../../billable-units";
import type { ToolCallRecord, UsageMessage } from "../../messages";
import { boundedGroups } from "../../shared/bounded-groups";
import { addConversationDays, type ConversationDays, countConversationCalls } from "./conversation-days";
import { addHourRows, type HourEntry, hourRows, jobEntry, toolEntry } from "./usage-hours";

export type { ToolCallRecord };

/** Largest JSON parameter one statement takes (D1 allows 2 MB a value); a queue batch is normally far under. */
const MAX_PARAMETER_CHARS = 1_000_000;

/** The job name the usage log's own writes are charged to, per tenant. */
export const USAGE_LOG_JOB = "usage_log";

/** A record sent by a worker from before units were counted: its round trips were fields of their own. */
type LegacyCall = { d1RoundTrips?: number; d1Ms?: number };

/**
 * Writes the usage log of many requests and job batches (a queue batch of UsageMessages, any tenants of this
 * database) in one round trip: each tool call a tool_calls row, and every call's and job's units summed into
 * usage_hours, each call in the conversation it names into tool_conversation_days. What that write cost D1 (its own meta) is then charged to each tenant as a `usage_log` job, by its
 * share of the calls and jobs, in a second statement that writes a row a tenant (counted in it as one: an hour's row
 * is summed into once it exists, which leaves its key's index entry as it is). `spent`: what else logging them cost
 * each tenant (the consumer's control read, a message's redelivery), added to its `usage_log` entry.
 */
export async function recordUsage(
  d1: D1Database,
  requests: readonly UsageMessage[],
  spent: ReadonlyMap<string, BillableUnits> = new Map(),
): Promise<void> {
  const calls = requests.flatMap(({ tenantId, calls }) => calls.map((call) => ({ tenantId, call })));
  const entries = requests.flatMap(({ tenantId, calls, jobs }) => [
    ...calls.flatMap((call) => toolEntry(tenantId, call) ?? []),
    ...(jobs ?? []).map((job) => jobEntry(tenantId, job)),
  ]);
  if (calls.length === 0 && entries.length === 0) return;
  const conversations: ConversationDays = new Map();
  countConversationCalls(conversations, calls);
  const statements = [
    ...toolCallStatements(d1, calls),
    ...(entries.length > 0 ? [addHourRows(d1, hourRows(entries))] : []),
    ...addConversationDays(d1, [...conversations.values()]),
  ];
  const results = await d1.batch(statements);
  const read = results.reduce((sum, r) => sum + (r.meta?.rows_read ?? 0), 0);
  const written = results.reduce((sum, r) => sum + (r.meta?.rows_written ?? 0), 0);
  // The calls are written: a failure here loses only this note of the log's own cost (a retry would log them twice).
  await addHourRows(d1, hourRows(ownCost(requests, read, written, spent)))
    .run()
    .catch((error) => console.error("usage log: recording its own cost failed", error));
}

/** Each tenant's share of the write's rows, by its calls and jobs, and the one row its own entry writes. */
function ownCost(
  requests: readonly UsageMessage[],
  read: number,
  written: number,
  spent: ReadonlyMap<string, BillableUnits>,
): HourEntry[] {
  const records = new Map<string, number>();
  for (const { tenantId, calls, jobs } of requests)
    records.set(tenantId, (records.get(tenantId) ?? 0) + calls.length + (jobs?.length ?? 0));
  const total = [...records.values()].reduce((sum, n) => sum + n, 0);
  const at = Date.now();
  return [...records].map(([tenantId, n]) => ({
    tenantId,
    at,
    source: "job",
    name: USAGE_LOG_JOB,
    project: null,
    failed: false,
    units: addUnits(
      {
        ...noUnits(),
        d1RoundTrips: 2 * (n / total),
        d1RowsRead: read * (n / total),
        d1RowsWritten: written * (n / total) + 1,
      },
      spent.get(tenantId) ?? {},
    ),
  }));
}

export function toolCallStatements(
  d1: D1Database,
  calls: readonly { tenantId: string; call: ToolCallRecord & LegacyCall }[],
): D1PreparedStatement[] {
  const rows = calls.map(({ tenantId, call: c }) =>
    JSON.stringify([
      tenantId,
      c.keyId,
      c.tool,
      c.project,
      c.conversationId,
      c.startedAt,
      c.durationMs,
      c.errorCode,
      c.units?.d1RoundTrips ?? c.d1RoundTrips ?? null,
      c.units?.d1Ms ?? c.d1Ms ?? null,
    ]),
  );
  if (rows.length === 0) return [];
  const groups = boundedGroups(rows, { count: Infinity, size: MAX_PARAMETER_CHARS }, (row) => row.length + 1);
  const insert = d1.prepare(
    `INSERT INTO tool_calls (tenant_id, key_id, tool, project, conversation_id, started_at, duration_ms, error_code, d1_round_trips, d1_ms)
     SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8, j.value ->> 9 FROM json_each(?) j`,
  );
  return groups.map((rows) => insert.bind(`[${rows.join(",")}]`));
}
