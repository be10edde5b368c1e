import type { ToolCallRecord, UsageMessage } from "../../messages";
import { boundedGroups } from "../../shared/bounded-groups";

export type { ToolCallRecord };

/** Largest JSON parameter one statement takes (D1 allows 2 MB a value); a queue batch is normally far under. */
const MAX_PARAMETER_CHARS = 1_000_000;

/**
 * Writes the usage log of many requests (a queue batch of UsageMessages, any tenants of this database): one
 * statement, the rows as one JSON parameter, split only past MAX_PARAMETER_CHARS. Returns the rows written.
 */
export async function recordToolCalls(d1: D1Database, requests: readonly UsageMessage[]): Promise<number> {
  const rows = requests.flatMap(({ tenantId, calls }) =>
    calls.map((c) =>
      JSON.stringify([
        tenantId,
        c.keyId,
        c.tool,
        c.project,
        c.conversationId,
        c.startedAt,
        c.durationMs,
        c.errorCode,
        c.d1RoundTrips,
        c.d1Ms,
      ]),
    ),
  );
  if (rows.length === 0) return 0;
  const groups = boundedGroups(rows, { count: Infinity, size: MAX_PARAMETER_CHARS }, (row) => row.length + 1);
  const insert = d1.prepare(
    `INSERT INTO tool_calls (tenant_id, key_id, tool, project, conversation_id, started_at, duration_ms, error_code, d1_round_trips, d1_ms)
     SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8, j.value ->> 9 FROM json_each(?) j`,
  );
  const statements = groups.map((rows) => insert.bind(`[${rows.join(",")}]`));
  if (statements.length === 1) await statements[0]!.run();
  else await d1.batch(statements);
  return rows.length;
}
