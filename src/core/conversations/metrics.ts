import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import { CONTEXT_RELATIONSHIPS } from "./conversations";

export type MetricsPeriod = "day" | "week" | "month";
const PERIOD_MS: Record<MetricsPeriod, number> = { day: 86_400_000, week: 7 * 86_400_000, month: 30 * 86_400_000 };

export interface ContextMetrics {
  averageScore: number;
  totalCalls: number;
  byType: Record<string, number>;
  historyTrend: { date: string; count: number }[];
  contextStats: { totalContexts: number; averageMessagesPerContext: number; summaryRate: number };
  relationshipMetrics: { totalRelationships: number; byType: Record<string, number> };
}

/** The hour an instant falls in: the usage log's aggregates count a period from its first hour whole. */
const hourOf = (at: number) => at - (at % 3_600_000);

/**
 * Seed 003's metrics: calls in the period from the usage log's hourly aggregates (total, per tool, per UTC day); the
 * average importance (0..1) of messages written in the period; contexts, messages per context and the
 * share of contexts with a summary; relationships between contexts by type.
 */
export async function contextMetrics(
  scope: TenantScope,
  period: MetricsPeriod,
  now = Date.now(),
): Promise<ContextMetrics> {
  const since = now - PERIOD_MS[period];
  const t = scope.tenantId;
  // A project-limited key sees the figures of its projects only (calls that named one of them).
  const own = projectClause(scope, "project");
  const [byTool, byDay, score, contexts, relationships] = await scope.d1.batch<Record<string, string | number | null>>([
    scope.d1
      .prepare(
        `SELECT name AS tool, SUM(calls) AS n FROM usage_hours WHERE tenant_id = ? AND hour >= ? AND source = 'tool'${own.sql} GROUP BY name ORDER BY n DESC, name`,
      )
      .bind(t, hourOf(since), ...own.params),
    scope.d1
      .prepare(
        `SELECT date(hour / 1000, 'unixepoch') AS day, SUM(calls) AS n FROM usage_hours WHERE tenant_id = ? AND hour >= ? AND source = 'tool'${own.sql} GROUP BY day ORDER BY day`,
      )
      .bind(t, hourOf(since), ...own.params),
    scope.d1
      .prepare(
        `SELECT AVG(importance) AS score FROM items WHERE tenant_id = ? AND kind = 'message' AND created_at >= ?${own.sql}`,
      )
      .bind(t, since, ...own.params),
    scope.d1
      .prepare(
        `SELECT COUNT(*) AS contexts, COALESCE(AVG(message_count), 0) AS messages,
           COALESCE(SUM(EXISTS (SELECT 1 FROM summaries s WHERE s.tenant_id = c.tenant_id AND s.conversation_id = c.id)), 0) AS summarized
         FROM conversations c WHERE tenant_id = ?${own.sql}`,
      )
      .bind(t, ...own.params),
    scope.d1
      .prepare(
        `SELECT l.relationship_type, COUNT(*) AS n FROM links l JOIN conversations c ON c.tenant_id = l.tenant_id AND c.id = l.source_id${projectClause(scope, "c.project").sql}
         WHERE l.tenant_id = ? AND l.source_type = 'conversation' AND l.target_type = 'conversation' GROUP BY l.relationship_type`,
      )
      .bind(...own.params, t),
  ]);
  const byType = Object.fromEntries(byTool!.results.map((r) => [r.tool as string, r.n as number]));
  const relationshipsByType: Record<string, number> = Object.fromEntries(
    CONTEXT_RELATIONSHIPS.map((type) => [type, 0]),
  );
  for (const r of relationships!.results) relationshipsByType[r.relationship_type as string] = r.n as number;
  const c = contexts!.results[0]!;
  const totalContexts = (c.contexts as number) ?? 0;
  return {
    averageScore: round((score!.results[0]?.score as number | null) ?? 0),
    totalCalls: Object.values(byType).reduce((a, b) => a + b, 0),
    byType,
    historyTrend: byDay!.results.map((r) => ({ date: r.day as string, count: r.n as number })),
    contextStats: {
      totalContexts,
      averageMessagesPerContext: round(c.messages as number),
      summaryRate: totalContexts === 0 ? 0 : round((c.summarized as number) / totalContexts),
    },
    relationshipMetrics: {
      totalRelationships: relationships!.results.reduce((s, r) => s + (r.n as number), 0),
      byType: relationshipsByType,
    },
  };
}

export interface ToolConversations {
  conversations: { conversation_id: string; usage_count: number; last_used: string; context_summary: string }[];
  total_conversations: number;
  usage_statistics: { total_invocations: number; average_per_conversation: number };
}

/**
 * Conversations a tool was called in, from the usage log's exact counts (tool_conversation_days: every call in the
 * conversation its arguments name; usage_hours: every call of the tool); each with its latest summary (or opening
 * message).
 */
export async function toolConversations(scope: TenantScope, tool: string, limit: number): Promise<ToolConversations> {
  const t = scope.tenantId;
  // Calls count for a project-limited key only when they named one of its projects; conversations only
  // when they belong to one.
  const own = projectClause(scope, "project");
  const conversation = projectClause(scope, "c.project");
  const [rows, totals, invocations] = await scope.d1.batch<Record<string, string | number>>([
    scope.d1
      .prepare(
        `SELECT conversation_id, SUM(calls) AS n, MAX(last_used) AS last FROM tool_conversation_days d
         WHERE tenant_id = ? AND tool = ?${own.sql}
         AND EXISTS (SELECT 1 FROM conversations c WHERE c.tenant_id = d.tenant_id AND c.id = d.conversation_id${conversation.sql})
         GROUP BY conversation_id ORDER BY last DESC, conversation_id LIMIT ?`,
      )
      .bind(t, tool, ...own.params, ...conversation.params, limit),
    scope.d1
      .prepare(
        `SELECT COALESCE(SUM(calls), 0) AS attributed, COUNT(DISTINCT conversation_id) AS conversations
         FROM tool_conversation_days WHERE tenant_id = ? AND tool = ?${own.sql}`,
      )
      .bind(t, tool, ...own.params),
    scope.d1
      .prepare(
        `SELECT COALESCE(SUM(calls), 0) AS n FROM usage_hours WHERE tenant_id = ? AND source = 'tool' AND name = ?${own.sql}`,
      )
      .bind(t, tool, ...own.params),
  ]);
  const ids = rows!.results.map((r) => r.conversation_id as string);
  const summaries = await conversationDigests(scope, ids);
  const total = totals!.results[0]!;
  return {
    conversations: rows!.results.map((r) => ({
      conversation_id: r.conversation_id as string,
      usage_count: r.n as number,
      last_used: new Date(r.last as number).toISOString(),
      context_summary: summaries.get(r.conversation_id as string) ?? "",
    })),
    total_conversations: total.conversations as number,
    usage_statistics: {
      total_invocations: invocations!.results[0]!.n as number,
      average_per_conversation:
        (total.conversations as number) === 0
          ? 0
          : round((total.attributed as number) / (total.conversations as number)),
    },
  };
}

/** Latest summary (else first message) of each conversation, shortened to 200 characters. */
async function conversationDigests(scope: TenantScope, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const list = JSON.stringify(ids);
  const [summaries, openings] = await scope.d1.batch<{ conversation_id: string; text: string }>([
    scope.d1
      .prepare(
        `SELECT conversation_id, summary AS text FROM summaries s WHERE tenant_id = ? AND conversation_id ${IN_JSON}
         AND version = (SELECT MAX(version) FROM summaries m WHERE m.tenant_id = s.tenant_id AND m.conversation_id = s.conversation_id)`,
      )
      .bind(scope.tenantId, list),
    scope.d1
      .prepare(
        `SELECT conversation_id, content AS text FROM items WHERE tenant_id = ? AND position = 0 AND conversation_id ${IN_JSON}`,
      )
      .bind(scope.tenantId, list),
  ]);
  const out = new Map<string, string>();
  for (const row of [...openings!.results, ...summaries!.results])
    out.set(row.conversation_id, row.text.length > 200 ? `${row.text.slice(0, 197)}...` : row.text);
  return out;
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
