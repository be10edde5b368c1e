import { tenantScope } from "../../db/scope";
import { type BlocksReportRow, blocksReport, blocksReportStatement } from "../keyword-index/block-pass";
import { type QuotaReport, quotaReport, quotaReportStatements, type TenantLimits } from "./quotas";
import { snakeCaseKeys, unitsReport, unitsStatement } from "./units-report";

export interface TenantStats {
  tenant_id: string;
  items: number;
  stashed_items: number;
  chunks: number;
  conversations: number;
  /** Items whose embed job has not finished yet (vector search does not see them). */
  pending_embeddings: number;
  /** Embedded items the auto-link job has not linked yet. */
  pending_links: number;
  tool_calls: number;
  /**
   * Words keyword search reads from posting blocks, and what the minute pass has yet to do for the tenant's blocks (0:
   * nothing; null: it has not looked at the tenant yet; src/core/keyword-index/block-pass.ts).
   */
  keyword_block_words: number;
  keyword_blocks_due: number | null;
  /** Each quota's limit (null = unlimited) and the tenant's usage (src/core/tenants/quotas.ts). */
  quotas: QuotaReport;
  /** Billable units since the start of the hour 24 hours ago: tools, jobs and totals (units-report.ts, snake_case). */
  billable_units_24h: unknown;
}

/** Counts for an operator: what a tenant stores, how far background embedding has got, its quotas and billable units. */
export async function tenantStats(
  d1: D1Database,
  tenantId: string,
  limits: TenantLimits,
  now = Date.now(),
): Promise<TenantStats> {
  const count = (sql: string) => d1.prepare(sql).bind(tenantId);
  const [items, chunks, conversations, calls, blocks, units, ...quotas] = await d1.batch<Record<string, number>>([
    count(
      "SELECT COUNT(*) AS items, SUM(tier = 'stashed') AS stashed, SUM(embedded_at IS NULL) AS pending, SUM(linked_at IS NULL) AS unlinked FROM items WHERE tenant_id = ?",
    ),
    count("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ?"),
    count("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ?"),
    // Every call the log holds, from its hourly aggregates (tool_calls keeps failed calls and a sample).
    count("SELECT COALESCE(SUM(calls), 0) AS n FROM usage_hours WHERE tenant_id = ? AND source = 'tool'"),
    blocksReportStatement(d1, tenantId),
    unitsStatement(tenantScope(d1, tenantId), now - 24 * 3_600_000),
    ...quotaReportStatements(d1, tenantId, now),
  ]);
  const row = items!.results[0]!;
  const report = blocksReport(blocks!.results[0] as BlocksReportRow | undefined);
  return {
    tenant_id: tenantId,
    items: row.items ?? 0,
    stashed_items: row.stashed ?? 0,
    chunks: chunks!.results[0]!.n ?? 0,
    conversations: conversations!.results[0]!.n ?? 0,
    pending_embeddings: row.pending ?? 0,
    pending_links: row.unlinked ?? 0,
    tool_calls: calls!.results[0]!.n ?? 0,
    keyword_block_words: report.words,
    keyword_blocks_due: report.due,
    quotas: quotaReport(limits, quotas, now),
    billable_units_24h: snakeCaseKeys(unitsReport(units!.results, 1)),
  };
}
