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
}

export async function recordToolCall(scope: TenantScope, call: ToolCallRecord): Promise<void> {
  await scope.db.insert(toolCalls).values({ tenantId: scope.tenantId, ...call });
}
