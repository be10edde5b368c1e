import { randomId } from "../../crypto";
import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import { type AppError, invalidParameter, notFound } from "../../errors";
import type { ConversationSummary, Services } from "../../ports";

export interface ConversationRow {
  id: string;
  project: string;
  messageCount: number;
  tokens: number;
  summarizedCount: number;
  summarizedTokens: number;
  createdAt: number;
  updatedAt: number;
}

export interface StoredMessage {
  id: string;
  role: string;
  content: string;
  importance: number;
  tags: string[];
  createdAt: number;
}

export interface StoredSummary extends ConversationSummary {
  conversationId: string;
  version: number;
  messageCount: number;
  tokensUsed: number;
  tokenLimit: number;
  createdAt: number;
}

/** What toConversation reads of a conversations row. */
const CONVERSATION_COLUMNS =
  "id, project, message_count, tokens, summarized_count, summarized_tokens, created_at, updated_at";

function conversationStatement(scope: TenantScope, id: string): D1PreparedStatement {
  const visible = projectClause(scope, "project");
  return scope.d1
    .prepare(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE tenant_id = ? AND id = ?${visible.sql}`)
    .bind(scope.tenantId, id, ...visible.params);
}

/** Conversations of the scope by id, in one statement (ids as one JSON parameter); missing ones are absent. */
export async function readConversations(scope: TenantScope, ids: string[]): Promise<ConversationRow[]> {
  const visible = projectClause(scope, "project");
  const { results } = await scope.d1
    .prepare(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE tenant_id = ? AND id ${IN_JSON}${visible.sql}`)
    .bind(scope.tenantId, JSON.stringify(ids), ...visible.params)
    .all<Record<string, number | string>>();
  return results.map((row) => toConversation(row)!);
}

/** A conversation of the scope (its tenant and projects); null when there is none the caller may see. */
export async function getConversation(scope: TenantScope, id: string): Promise<ConversationRow | null> {
  return toConversation(await conversationStatement(scope, id).first<Record<string, number | string>>());
}

/**
 * A conversation with its messages (oldest first) and latest summary, in one D1 round trip; the messages
 * and summary are returned only when the scope may see the conversation.
 */
export async function readConversationWhole(
  scope: TenantScope,
  id: string,
): Promise<{ conversation: ConversationRow; messages: StoredMessage[]; summary: StoredSummary | null } | null> {
  const [conversation, messages, summary] = await scope.d1.batch<Record<string, string | number | null>>([
    conversationStatement(scope, id),
    messagesStatement(scope, id),
    latestSummaryStatement(scope, id),
  ]);
  const row = toConversation((conversation!.results[0] as Record<string, number | string> | undefined) ?? null);
  if (!row) return null;
  const latest = summary!.results[0] as Record<string, string | number> | undefined;
  return {
    conversation: row,
    messages: messages!.results.map((r) => toMessage(r as MessageRow)),
    summary: latest ? toSummary(latest) : null,
  };
}

function toConversation(row: Record<string, number | string> | null): ConversationRow | null {
  if (!row) return null;
  return {
    id: row.id as string,
    project: row.project as string,
    messageCount: row.message_count as number,
    tokens: row.tokens as number,
    summarizedCount: row.summarized_count as number,
    summarizedTokens: row.summarized_tokens as number,
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
  };
}

export function conversationNotFound(id: string, parameter = "contextId"): AppError {
  return notFound(`Context '${id}' does not exist (${parameter})`, { parameter, id });
}

export async function requireConversation(
  scope: TenantScope,
  id: string,
  parameter = "contextId",
): Promise<ConversationRow> {
  const conversation = await getConversation(scope, id);
  if (!conversation) throw conversationNotFound(id, parameter);
  return conversation;
}

/** Conversation ids, most recently active first, limited to the given projects (undefined = all). */
export async function listConversations(
  scope: TenantScope,
  projects: string[] | undefined,
  limit = 500,
): Promise<string[]> {
  const visible = projectClause(scope, "project");
  const where = projects ? ` AND project ${IN_JSON}` : "";
  const { results } = await scope.d1
    .prepare(`SELECT id FROM conversations WHERE tenant_id = ?${visible.sql}${where} ORDER BY updated_at DESC LIMIT ?`)
    .bind(scope.tenantId, ...visible.params, ...(projects ? [JSON.stringify(projects)] : []), limit)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

export type MessageRow = {
  id: string;
  role: string | null;
  content: string;
  importance: number;
  tags: string;
  created_at: number;
};

export function messagesStatement(scope: TenantScope, conversationId: string): D1PreparedStatement {
  return scope.d1
    .prepare(
      "SELECT id, role, content, importance, tags, created_at FROM items WHERE tenant_id = ? AND conversation_id = ? ORDER BY position",
    )
    .bind(scope.tenantId, conversationId);
}

export function toMessage(r: MessageRow): StoredMessage {
  return {
    id: r.id,
    role: r.role ?? "user",
    content: r.content,
    importance: r.importance,
    tags: JSON.parse(r.tags) as string[],
    createdAt: r.created_at,
  };
}

function latestSummaryStatement(scope: TenantScope, conversationId: string): D1PreparedStatement {
  return scope.d1
    .prepare("SELECT * FROM summaries WHERE tenant_id = ? AND conversation_id = ? ORDER BY version DESC LIMIT 1")
    .bind(scope.tenantId, conversationId);
}

export async function latestSummary(scope: TenantScope, conversationId: string): Promise<StoredSummary | null> {
  const row = await latestSummaryStatement(scope, conversationId).first<Record<string, string | number>>();
  return row ? toSummary(row) : null;
}

/**
 * Writes a new summary version of a conversation (summarize_context): the conversation and its messages
 * in one read, the summary in one write; null for a conversation deleted meanwhile.
 */
export async function summarizeConversation(
  scope: TenantScope,
  services: Services,
  conversationId: string,
): Promise<StoredSummary | null> {
  const [found, read] = await scope.d1.batch<Record<string, string | number | null>>([
    conversationStatement(scope, conversationId),
    messagesStatement(scope, conversationId),
  ]);
  const conversation = toConversation((found!.results[0] as Record<string, number | string> | undefined) ?? null);
  if (!conversation) throw conversationNotFound(conversationId);
  const messages = (read!.results as MessageRow[]).map(toMessage);
  const [inserted] = await scope.d1.batch<Record<string, string | number>>(
    await summaryWrites(scope, services, conversation, messages),
  );
  const row = inserted!.results[0];
  return row ? toSummary(row) : null;
}

/**
 * Summarizes the messages and returns the two statements that store it, for one batch: the new version
 * (previous + 1, RETURNING it; nothing for a conversation deleted meanwhile) and how many messages and
 * tokens the summaries now cover.
 */
export async function summaryWrites(
  scope: TenantScope,
  services: Services,
  conversation: ConversationRow,
  messages: StoredMessage[],
): Promise<D1PreparedStatement[]> {
  const tokenLimit = services.config.conversations.summaryTokenLimit;
  const summary = await (await services.summarizer()).summarize(messages, tokenLimit);
  const tokensUsed = (await services.tokens()).count(summary.summary);
  return [
    scope.d1
      .prepare(
        `INSERT INTO summaries (tenant_id, conversation_id, version, summary, code_blocks, key_insights, importance_score, message_count, tokens_used, token_limit, created_at)
         SELECT ?1, ?2, COALESCE(MAX(version), 0) + 1, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 FROM summaries WHERE tenant_id = ?1 AND conversation_id = ?2
         HAVING EXISTS (SELECT 1 FROM conversations WHERE tenant_id = ?1 AND id = ?2)
         RETURNING *`,
      )
      .bind(
        scope.tenantId,
        conversation.id,
        summary.summary,
        JSON.stringify(summary.codeBlocks),
        JSON.stringify(summary.keyInsights),
        summary.importanceScore,
        messages.length,
        tokensUsed,
        tokenLimit,
        Date.now(),
      ),
    scope.d1
      .prepare(
        "UPDATE conversations SET summarized_count = MAX(summarized_count, ?), summarized_tokens = MAX(summarized_tokens, ?) WHERE tenant_id = ? AND id = ?",
      )
      .bind(messages.length, conversation.tokens, scope.tenantId, conversation.id),
  ];
}

/** Whether new messages or tokens since the last summary cross seed 003's thresholds. */
export function needsSummary(
  conversation: Pick<ConversationRow, "messageCount" | "tokens" | "summarizedCount" | "summarizedTokens">,
  config: Services["config"]["conversations"],
): boolean {
  if (!config.autoSummarize) return false;
  const newMessages = conversation.messageCount - conversation.summarizedCount;
  const newTokens = conversation.tokens - conversation.summarizedTokens;
  return (
    newMessages >= config.messageLimitThreshold ||
    newTokens >= (config.tokenLimitPercentage / 100) * config.modelTokenLimit
  );
}

export const CONTEXT_RELATIONSHIPS = ["similar", "continues", "references", "parent", "child"] as const;
export type ContextRelationship = (typeof CONTEXT_RELATIONSHIPS)[number];

/** A directed, weighted link between two existing conversations (upserted: same type again reweights). */
export async function linkConversations(
  scope: TenantScope,
  input: { sourceId: string; targetId: string; type: string; weight: number },
): Promise<void> {
  if (input.sourceId === input.targetId)
    throw invalidParameter(
      "targetContextId",
      "A context cannot be related to itself (sourceContextId equals targetContextId)",
    );
  await requireConversation(scope, input.sourceId, "sourceContextId");
  await requireConversation(scope, input.targetId, "targetContextId");
  await scope.d1
    .prepare(
      `INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES (?, ?, 'conversation', ?, 'conversation', ?, ?, ?, ?)
       ON CONFLICT (tenant_id, source_type, source_id, target_type, target_id, relationship_type) DO UPDATE SET weight = excluded.weight`,
    )
    .bind(randomId("rel_"), scope.tenantId, input.sourceId, input.targetId, input.type, input.weight, Date.now())
    .run();
}

export interface ConversationEdge {
  sourceId: string;
  targetId: string;
  type: string;
  weight: number;
}

/**
 * Links touching a conversation, in the direction(s) asked, optionally of one type; only links whose
 * other end is a conversation the scope may see.
 */
export async function conversationEdges(
  scope: TenantScope,
  id: string,
  direction: "incoming" | "outgoing" | "both",
  type?: string,
): Promise<ConversationEdge[]> {
  const sides = {
    both: "(l.source_id = ? OR l.target_id = ?)",
    outgoing: "l.source_id = ?",
    incoming: "l.target_id = ?",
  }[direction];
  const visible = projectClause(scope, "o.project");
  const { results } = await scope.d1
    .prepare(
      `SELECT l.source_id, l.target_id, l.relationship_type, l.weight FROM links l
       JOIN conversations o ON o.tenant_id = l.tenant_id AND o.id = CASE WHEN l.source_id = ? THEN l.target_id ELSE l.source_id END${visible.sql}
       WHERE l.tenant_id = ? AND l.source_type = 'conversation' AND l.target_type = 'conversation' AND ${sides}${type ? " AND l.relationship_type = ?" : ""}
       ORDER BY l.weight DESC, l.created_at`,
    )
    .bind(id, ...visible.params, scope.tenantId, ...(direction === "both" ? [id, id] : [id]), ...(type ? [type] : []))
    .all<{ source_id: string; target_id: string; relationship_type: string; weight: number }>();
  return results.map((r) => ({
    sourceId: r.source_id,
    targetId: r.target_id,
    type: r.relationship_type,
    weight: r.weight,
  }));
}

function toSummary(row: Record<string, string | number>): StoredSummary {
  return {
    conversationId: row.conversation_id as string,
    version: row.version as number,
    summary: row.summary as string,
    codeBlocks: JSON.parse(row.code_blocks as string) as string[],
    keyInsights: JSON.parse(row.key_insights as string) as string[],
    importanceScore: row.importance_score as number,
    messageCount: row.message_count as number,
    tokensUsed: row.tokens_used as number,
    tokenLimit: row.token_limit as number,
    createdAt: row.created_at as number,
  };
}
