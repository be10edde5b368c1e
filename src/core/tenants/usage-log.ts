import type { TenantScope } from "../../db/scope";

/** One tool call, as the usage log keeps it. Later tools read it (metrics, tool conversations). */
export interface ToolCallRecord {
  keyId: string;
  tool: string;
  project: string | null;
  conversationId: string | null;
  startedAt: number;
  durationMs: number;
  errorCode: string | null;
  /** D1 round trips the call waited on (statements run alone, plus batches); a batched group's share. */
  d1RoundTrips: number;
  /** Time spent waiting on those round trips (the rest of durationMs is the worker's own work and other I/O). */
  d1Ms: number;
}

/** The calls of one request in one statement (a JSON-RPC batch logs up to 50), their fields as one JSON parameter. */
export async function recordToolCalls(scope: TenantScope, calls: ToolCallRecord[]): Promise<void> {
  if (calls.length === 0) return;
  const rows = calls.map((c) => [c.keyId, c.tool, c.project, c.conversationId, c.startedAt, c.durationMs, c.errorCode, c.d1RoundTrips, c.d1Ms]);
  await scope.d1
    .prepare(
      `INSERT INTO tool_calls (tenant_id, key_id, tool, project, conversation_id, started_at, duration_ms, error_code, d1_round_trips, d1_ms)
       SELECT ?, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8 FROM json_each(?) j`,
    )
    .bind(scope.tenantId, JSON.stringify(rows))
    .run();
}
