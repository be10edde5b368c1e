import { projectClause, type TenantScope } from "../../db/scope";

/** What extraction did and cost over a period, and whether it is running now. */
export interface ExtractionUsage {
  windows: number;
  failedWindows: number;
  modelCalls: number;
  /** Conversation turns the windows read. */
  turns: number;
  tokensIn: number;
  tokensOut: number;
  neurons: number;
  /** The same, per ingested turn (null before any turn was read). */
  perTurn: { modelCalls: number; tokensIn: number; tokensOut: number; neurons: number } | null;
  meanLatencyMs: number | null;
  /** The latest deferral, when it is still in force (the day it named has not ended): why extraction waits. */
  waiting: string | null;
}

/** Two statements for the usage report's batch: the period's windows summed, and the latest deferral. */
export function extractionUsageStatements(scope: TenantScope, since: number): D1PreparedStatement[] {
  const own = projectClause(scope, "project");
  return [
    scope.d1
      .prepare(
        `SELECT COUNT(*) AS windows, COALESCE(SUM(status = 'failed'), 0) AS failed, COALESCE(SUM(calls), 0) AS calls,
           COALESCE(SUM(turns), 0) AS turns, COALESCE(SUM(tokens_in), 0) AS tokens_in,
           COALESCE(SUM(tokens_out), 0) AS tokens_out, COALESCE(SUM(neurons), 0) AS neurons, AVG(latency_ms) AS latency
         FROM extraction_windows WHERE tenant_id = ? AND created_at >= ?${own.sql}`,
      )
      .bind(scope.tenantId, since, ...own.params),
    scope.d1
      .prepare(
        `SELECT at, error FROM memory_events WHERE tenant_id = ? AND event = 'deferred'${own.sql} ORDER BY at DESC LIMIT 1`,
      )
      .bind(scope.tenantId, ...own.params),
  ];
}

export function extractionUsage([sums, deferral]: D1Result<unknown>[], now: number): ExtractionUsage {
  const s = sums!.results[0] as Record<string, number | null>;
  const turns = s.turns ?? 0;
  const per = (n: number | null | undefined) => Math.round(((n ?? 0) / turns) * 100) / 100;
  const last = deferral!.results[0] as { at: number; error: string } | undefined;
  const day = 86_400_000;
  const waiting = last && Math.floor(last.at / day) === Math.floor(now / day) ? last.error : null;
  return {
    windows: s.windows ?? 0,
    failedWindows: s.failed ?? 0,
    modelCalls: s.calls ?? 0,
    turns,
    tokensIn: s.tokens_in ?? 0,
    tokensOut: s.tokens_out ?? 0,
    neurons: s.neurons ?? 0,
    perTurn:
      turns === 0
        ? null
        : {
            modelCalls: per(s.calls),
            tokensIn: per(s.tokens_in),
            tokensOut: per(s.tokens_out),
            neurons: per(s.neurons),
          },
    meanLatencyMs: s.latency === null || s.latency === undefined ? null : Math.round(s.latency),
    waiting,
  };
}
