import type { TenantScope } from "../../db/scope";
import { toolCalls } from "../../db/schema";

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

/** The calls of one request in one round trip (a JSON-RPC batch logs up to 50). */
export async function recordToolCalls(scope: TenantScope, calls: ToolCallRecord[]): Promise<void> {
  if (calls.length === 0) return;
  const [first, ...rest] = calls.map((call) => scope.db.insert(toolCalls).values({ tenantId: scope.tenantId, ...call }));
  await scope.db.batch([first!, ...rest]);
}
