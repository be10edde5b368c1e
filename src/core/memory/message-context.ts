import { IN_JSON, type TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { rewriteChunkContexts } from "../keyword-index/indexing";
import { messageContext, queueEmbedding } from "./items";

/**
 * A message's chunks carry the start of the turn before it as context (items.ts messageContext), in
 * chunks_fts and in their vectors. Deleting a message must not leave its words there: the message that
 * followed it gets its context rebuilt from the turn now before it.
 */

/** The next surviving message after each deleted one (read before the deletion; `deletedJson` lists every id deleted). */
export function followersStatement(scope: TenantScope, groupJson: string, deletedJson: string): D1PreparedStatement {
  return scope.d1
    .prepare(
      `SELECT (SELECT n.id FROM items n WHERE n.tenant_id = d.tenant_id AND n.conversation_id = d.conversation_id AND n.position > d.position AND n.id NOT ${IN_JSON}
               ORDER BY n.position LIMIT 1) AS follower
       FROM items d WHERE +d.tenant_id = ? AND d.conversation_id IS NOT NULL AND d.id ${IN_JSON}`,
    )
    .bind(deletedJson, scope.tenantId, groupJson);
}

/** Rebuilds the context of these messages' chunks from the turn now before each, and re-queues their embedding. */
export async function refreshMessageContexts(
  scope: TenantScope,
  services: Services,
  messageIds: string[],
): Promise<void> {
  if (messageIds.length === 0) return;
  const { results } = await scope.d1
    .prepare(
      `SELECT c.id, c.content, c.context, c.fts_tokens,
              (SELECT p.content FROM items p WHERE p.tenant_id = f.tenant_id AND p.conversation_id = f.conversation_id AND p.position < f.position ORDER BY p.position DESC LIMIT 1) AS previous
       FROM items f JOIN chunks c ON c.tenant_id = f.tenant_id AND c.item_id = f.id WHERE +f.tenant_id = ? AND f.id ${IN_JSON}`,
    )
    .bind(scope.tenantId, JSON.stringify(messageIds))
    .all<{ id: number; content: string; context: string; fts_tokens: number | null; previous: string | null }>();
  // The speaker is the context's first line (a message always has a role).
  const changed = results
    .map((c) => ({
      id: c.id,
      content: c.content,
      context: messageContext(c.context.split("\n")[0] ?? "", c.previous),
      ftsTokens: c.fts_tokens,
      old: c.context,
    }))
    .filter((c) => c.context !== c.old);
  if (changed.length === 0) return;
  await scope.d1.batch([
    ...rewriteChunkContexts(scope, changed),
    scope.d1
      .prepare(`UPDATE items SET embedded_at = NULL WHERE tenant_id = ? AND id ${IN_JSON}`)
      .bind(scope.tenantId, JSON.stringify(messageIds)),
  ]);
  await queueEmbedding(scope, services, messageIds);
}
