import { randomId } from "../../crypto";
import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import { notFound } from "../../errors";
import type { Services } from "../../ports";
import { dot } from "../../shared/vector-math";

const CONTEXT_LINK = "context";

export interface ContextLink {
  chunkId: number;
  content: string;
  resourceId: string;
  strength: number;
}

/**
 * Links a message to the chunks that informed it (seed 000's context links). The message and every
 * chunk must exist in the tenant, else nothing is written. Strength = cosine between the message's and
 * the chunk's embeddings when both exist, else 1.
 */
export async function storeContextLinks(
  scope: TenantScope,
  services: Services,
  messageId: string,
  chunkIds: number[],
): Promise<number[]> {
  const unique = [...new Set(chunkIds)];
  const visible = projectClause(scope, "i.project");
  const [message, chunks] = await scope.d1.batch<{ id: number | string; item_id?: string }>([
    scope.d1
      .prepare(
        `SELECT c.id FROM items i LEFT JOIN chunks c ON c.item_id = i.id AND c.chunk_index = 0 WHERE i.tenant_id = ? AND i.id = ?${visible.sql}`,
      )
      .bind(scope.tenantId, messageId, ...visible.params),
    scope.d1
      .prepare(
        `SELECT c.id FROM chunks c JOIN items i ON i.id = c.item_id WHERE +c.tenant_id = ? AND +i.tenant_id = ? AND c.id ${IN_JSON}${visible.sql}`,
      )
      .bind(scope.tenantId, scope.tenantId, JSON.stringify(unique), ...visible.params),
  ]);
  if (message!.results.length === 0)
    throw notFound(`Message '${messageId}' does not exist (message_id)`, { parameter: "message_id", id: messageId });
  const found = new Set(chunks!.results.map((r) => r.id as number));
  const missing = unique.filter((id) => !found.has(id));
  if (missing.length > 0)
    throw notFound(`Chunks not found: ${missing.join(", ")} (chunk_ids)`, { parameter: "chunk_ids", missing });
  const messageChunk = message!.results[0]!.id as number | null;
  const vectors = await services.vectors.getVectors(
    scope.tenantId,
    messageChunk === null ? unique : [messageChunk, ...unique],
  );
  const messageVector = messageChunk === null ? undefined : vectors.get(messageChunk);
  const now = Date.now();
  const rows = unique.map((chunkId) => {
    const chunkVector = vectors.get(chunkId);
    const strength =
      messageVector && chunkVector && messageVector.length === chunkVector.length
        ? Math.max(0, round(dot(messageVector, chunkVector)))
        : 1;
    return [randomId("rel_"), String(chunkId), strength];
  });
  // One statement for all the links (rows as one JSON parameter): D1 counts each statement of a batch against
  // the invocation's queries, and 100 links one a statement would be twice the Free plan's 50.
  await scope.d1
    .prepare(
      `INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at)
       SELECT j.value ->> 0, ?1, 'item', ?2, 'chunk', j.value ->> 1, '${CONTEXT_LINK}', j.value ->> 2, ?3 FROM json_each(?4) j WHERE true
       ON CONFLICT (tenant_id, source_type, source_id, target_type, target_id, relationship_type) DO UPDATE SET weight = excluded.weight`,
    )
    .bind(scope.tenantId, messageId, now, JSON.stringify(rows))
    .run();
  return unique;
}

/** The chunks a message is linked to; the message and each chunk must lie in the scope's projects. */
export async function contextLinksForMessage(scope: TenantScope, messageId: string): Promise<ContextLink[]> {
  const message = projectClause(scope, "m.project");
  const chunk = projectClause(scope, "ci.project");
  const { results } = await scope.d1
    .prepare(
      `SELECT c.id, c.content, c.item_id, l.weight FROM links l
       JOIN items m ON m.tenant_id = l.tenant_id AND m.id = l.source_id${message.sql}
       JOIN chunks c ON c.tenant_id = l.tenant_id AND c.id = CAST(l.target_id AS INTEGER)
       JOIN items ci ON ci.tenant_id = c.tenant_id AND ci.id = c.item_id${chunk.sql}
       WHERE l.tenant_id = ? AND l.source_type = 'item' AND l.source_id = ? AND l.target_type = 'chunk' AND l.relationship_type = '${CONTEXT_LINK}'
       ORDER BY l.weight DESC, c.id`,
    )
    .bind(...message.params, ...chunk.params, scope.tenantId, messageId)
    .all<{ id: number; content: string; item_id: string; weight: number }>();
  return results.map((r) => ({ chunkId: r.id, content: r.content, resourceId: r.item_id, strength: r.weight }));
}

export interface ReferencingMessage {
  messageId: string;
  content: string;
  conversationId: string | null;
  createdAt: number;
}

/** Messages linked to a chunk; the chunk and each message must lie in the scope's projects. */
export async function messagesForChunk(scope: TenantScope, chunkId: number): Promise<ReferencingMessage[]> {
  const message = projectClause(scope, "i.project");
  const chunk = projectClause(scope, "ci.project");
  const { results } = await scope.d1
    .prepare(
      `SELECT i.id, i.content, i.conversation_id, i.created_at FROM links l JOIN items i ON i.tenant_id = l.tenant_id AND i.id = l.source_id${message.sql}
       WHERE l.tenant_id = ? AND l.target_type = 'chunk' AND l.target_id = ? AND l.source_type = 'item' AND l.relationship_type = '${CONTEXT_LINK}'
       AND EXISTS (SELECT 1 FROM chunks c JOIN items ci ON ci.id = c.item_id WHERE c.tenant_id = l.tenant_id AND c.id = ? AND ci.tenant_id = l.tenant_id${chunk.sql})
       ORDER BY i.created_at DESC`,
    )
    .bind(...message.params, scope.tenantId, String(chunkId), chunkId, ...chunk.params)
    .all<{ id: string; content: string; conversation_id: string | null; created_at: number }>();
  return results.map((r) => ({
    messageId: r.id,
    content: r.content,
    conversationId: r.conversation_id,
    createdAt: r.created_at,
  }));
}

export interface ContextUsageStatistics {
  total_context_links: number;
  total_chunks: number;
  total_messages: number;
  average_links_per_message: number;
  most_referenced_chunks: { chunk_id: number; reference_count: number }[];
  context_usage_trends: { daily_average: number; peak_usage_hour: number | null };
}

const DAY_MS = 86_400_000;
const TREND_DAYS = 30;

/**
 * Context-link and usage figures for the scope (tenant, and the key's projects when it is limited);
 * trends come from the usage log (last 30 days, UTC).
 */
export async function contextUsageStatistics(scope: TenantScope, now = Date.now()): Promise<ContextUsageStatistics> {
  const t = scope.tenantId;
  const since = now - TREND_DAYS * DAY_MS;
  const items = projectClause(scope, "i.project");
  const calls = projectClause(scope, "project");
  const link = `l.tenant_id = ? AND l.source_type = 'item' AND l.target_type = 'chunk' AND l.relationship_type = '${CONTEXT_LINK}'`;
  const ownLinks = `FROM links l JOIN items i ON i.tenant_id = l.tenant_id AND i.id = l.source_id${items.sql} WHERE ${link}`;
  const [links, chunks, messages, top, callCount, peak] = await scope.d1.batch<Record<string, number>>([
    scope.d1
      .prepare(`SELECT COUNT(*) AS n, COUNT(DISTINCT l.source_id) AS sources ${ownLinks}`)
      .bind(...items.params, t),
    scope.d1
      .prepare(
        `SELECT COUNT(*) AS n FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.tenant_id = ? AND i.tenant_id = ?${items.sql}`,
      )
      .bind(t, t, ...items.params),
    scope.d1
      .prepare(`SELECT COUNT(*) AS n FROM items i WHERE i.tenant_id = ? AND i.kind = 'message'${items.sql}`)
      .bind(t, ...items.params),
    scope.d1
      .prepare(
        `SELECT CAST(l.target_id AS INTEGER) AS chunk_id, COUNT(*) AS reference_count ${ownLinks} GROUP BY l.target_id ORDER BY reference_count DESC, chunk_id LIMIT 10`,
      )
      .bind(...items.params, t),
    scope.d1
      .prepare(
        `SELECT COALESCE(SUM(calls), 0) AS n FROM usage_hours WHERE tenant_id = ? AND hour >= ? AND source = 'tool'${calls.sql}`,
      )
      .bind(t, since - (since % 3_600_000), ...calls.params),
    scope.d1
      .prepare(
        `SELECT CAST(strftime('%H', hour / 1000, 'unixepoch') AS INTEGER) AS hour, SUM(calls) AS n FROM usage_hours
         WHERE tenant_id = ? AND hour >= ? AND source = 'tool'${calls.sql} GROUP BY 1 ORDER BY n DESC, 1 LIMIT 1`,
      )
      .bind(t, since - (since % 3_600_000), ...calls.params),
  ]);
  const totalLinks = links!.results[0]!.n ?? 0;
  const sources = links!.results[0]!.sources ?? 0;
  return {
    total_context_links: totalLinks,
    total_chunks: chunks!.results[0]!.n ?? 0,
    total_messages: messages!.results[0]!.n ?? 0,
    average_links_per_message: sources === 0 ? 0 : round(totalLinks / sources),
    most_referenced_chunks: top!.results.map((r) => ({ chunk_id: r.chunk_id!, reference_count: r.reference_count! })),
    context_usage_trends: {
      daily_average: round((callCount!.results[0]!.n ?? 0) / TREND_DAYS),
      peak_usage_hour: peak!.results[0]?.hour ?? null,
    },
  };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
