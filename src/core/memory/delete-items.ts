import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { bumpCacheGenerations } from "../context/cache-generation";
import { dropStaleCacheEntries } from "../context/semantic-cache";
import { recordBlockChanges } from "../keyword-index/block-build";
import { uncountKeywordChunks } from "../keyword-index/indexing";
import { countKeywordWritesOf } from "../keyword-index/write-counter";
import { ITEM_LINK_TYPES, type SegmentKey, slices } from "../working-set/segments";
import { derivedCascade } from "./derived-cascade";
import { followersStatement, refreshMessageContexts } from "./message-context";

const ITEM_TYPES_SQL = ITEM_LINK_TYPES.map((t) => `'${t}'`).join(", ");
const IDS = "(SELECT value FROM json_each(?))";
const CHUNK_IDS = `(SELECT id FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS})`;
const CHUNK_ID_STRINGS = `(SELECT CAST(id AS TEXT) FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS})`;

/**
 * The one destructive path: removes items with everything derived from them, so nothing is left
 * orphaned. Vectors go first (the port: Vectorize by id, or the local index's rows); then one D1
 * batch removes FTS rows, links from or to the items or their chunks, chunks, the items themselves,
 * adjusts their conversations' counters, removes every summary of a conversation that lost a message
 * (a summary may quote it), and bumps the cache generations of their projects; then the superseded cache
 * entries leave the index and KV, and the conversations whose summaries went are queued to be summarized
 * again from what is left, and the messages that followed deleted ones get their context (which quotes
 * the turn before) rebuilt. If the vector deletion fails nothing in D1 has changed and the call can be
 * repeated; if the batch fails, the items keep working by keyword and a repeated delete finishes the job.
 * `conversationsGoToo` for callers that delete the conversations as well (tenant and project deletion).
 */
export async function deleteItems(
  scope: TenantScope,
  services: Services,
  requested: readonly SegmentKey[],
  options: { conversationsGoToo?: boolean } = {},
): Promise<SegmentKey[]> {
  if (requested.length === 0) return [];
  // Nothing derived outlives its sources: memories extracted only from these items go with them.
  const cascade = await derivedCascade(
    scope,
    requested.map((i) => i.id),
  );
  const items = [...requested, ...cascade.drop];
  const groups = slices(items.map((i) => i.id));
  const deletedJson = JSON.stringify(items.map((i) => i.id));
  const keepConversations = options.conversationsGoToo !== true;
  const reads = await scope.d1.batch<{ id?: number; follower?: string | null }>([
    ...groups.map((ids) =>
      scope.d1
        .prepare(`SELECT id FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS}`)
        .bind(scope.tenantId, JSON.stringify(ids)),
    ),
    ...(keepConversations ? groups.map((ids) => followersStatement(scope, JSON.stringify(ids), deletedJson)) : []),
  ]);
  const chunkIds = reads.slice(0, groups.length).flatMap((r) => r.results.map((c) => c.id!));
  const followers = [
    ...new Set(
      reads
        .slice(groups.length)
        .flatMap((r) => r.results.flatMap((row) => (typeof row.follower === "string" ? [row.follower] : []))),
    ),
  ];
  if (chunkIds.length > 0) await services.vectors.delete(scope.tenantId, chunkIds);

  const t = scope.tenantId;
  const statements: D1PreparedStatement[] = [];
  for (const ids of groups) {
    const json = JSON.stringify(ids);
    const conversationsOfItems = `(SELECT conversation_id FROM items WHERE tenant_id = ? AND conversation_id IS NOT NULL AND id IN ${IDS})`;
    statements.push(
      scope.d1
        .prepare(
          `DELETE FROM summaries WHERE tenant_id = ? AND conversation_id IN ${conversationsOfItems} RETURNING conversation_id AS summarized`,
        )
        .bind(t, t, json),
      countKeywordWritesOf(scope.d1, `tenant_id = ? AND item_id IN ${IDS}`, t, json),
      recordBlockChanges(scope.d1, `tenant_id = ? AND item_id IN ${IDS}`, t, json),
      scope.d1.prepare(`DELETE FROM chunks_fts WHERE rowid IN ${CHUNK_IDS}`).bind(t, json),
      scope.d1
        .prepare(`DELETE FROM links WHERE tenant_id = ? AND source_type IN (${ITEM_TYPES_SQL}) AND source_id IN ${IDS}`)
        .bind(t, json),
      scope.d1
        .prepare(`DELETE FROM links WHERE tenant_id = ? AND target_type IN (${ITEM_TYPES_SQL}) AND target_id IN ${IDS}`)
        .bind(t, json),
      scope.d1
        .prepare(`DELETE FROM links WHERE tenant_id = ? AND source_type = 'chunk' AND source_id IN ${CHUNK_ID_STRINGS}`)
        .bind(t, t, json),
      scope.d1
        .prepare(`DELETE FROM links WHERE tenant_id = ? AND target_type = 'chunk' AND target_id IN ${CHUNK_ID_STRINGS}`)
        .bind(t, t, json),
      uncountKeywordChunks(scope, json),
      scope.d1.prepare(`DELETE FROM chunks WHERE tenant_id = ? AND item_id IN ${IDS}`).bind(t, json),
      scope.d1
        .prepare(
          `UPDATE conversations SET
             message_count = MAX(0, message_count - (SELECT COUNT(*) FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id AND i.id IN ${IDS})),
             tokens = MAX(0, tokens - (SELECT COALESCE(SUM(i.tokens), 0) FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id AND i.id IN ${IDS})),
             summarized_count = 0, summarized_tokens = 0,
             extracted_tokens = MAX(0, extracted_tokens - (SELECT COALESCE(SUM(i.tokens), 0) FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id AND i.id IN ${IDS} AND i.position < conversations.extracted_count))
           WHERE tenant_id = ? AND id IN (SELECT conversation_id FROM items WHERE tenant_id = ? AND conversation_id IS NOT NULL AND id IN ${IDS})`,
        )
        .bind(json, json, json, t, t, json),
      scope.d1.prepare(`DELETE FROM items WHERE tenant_id = ? AND id IN ${IDS} RETURNING id`).bind(t, json),
    );
  }
  statements.push(...cascade.statements);
  statements.push(...bumpCacheGenerations(scope, new Set(items.map((i) => i.project))));
  const results = await scope.d1.batch<{ id?: string; summarized?: string }>(statements);
  const deleted = new Set(
    results.flatMap((r) => r.results.flatMap((row) => (typeof row.id === "string" ? [row.id] : []))),
  );
  const unsummarized = new Set(
    results.flatMap((r) => r.results.flatMap((row) => (typeof row.summarized === "string" ? [row.summarized] : []))),
  );
  await dropStaleCacheEntries(scope, services.cache);
  if (keepConversations) {
    await refreshMessageContexts(scope, services, followers);
    if (unsummarized.size > 0) await queueSummaries(scope, services, [...unsummarized]);
  }
  return requested.filter((i) => deleted.has(i.id));
}

/** A conversation whose summaries were removed gets a new one from the messages left (if any are). */
async function queueSummaries(scope: TenantScope, services: Services, conversationIds: string[]): Promise<void> {
  const { results } = await scope.d1
    .prepare(`SELECT id, message_count FROM conversations WHERE tenant_id = ? AND message_count > 0 AND id IN ${IDS}`)
    .bind(scope.tenantId, JSON.stringify(conversationIds))
    .all<{ id: string; message_count: number }>();
  await services.jobs.send(
    results.map((c) => ({
      type: "summarize",
      tenantId: scope.tenantId,
      conversationId: c.id,
      messageCount: c.message_count,
    })),
  );
}
