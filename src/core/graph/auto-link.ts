import { randomId } from "../../crypto";
import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { bumpCacheGenerations } from "../context/cache-generation";
import { readItems, type StoredItem } from "../memory/items";

const NEIGHBOURS = 20;

export interface SimilarRecord {
  id: string;
  similarity: number;
}

/**
 * Nearest neighbours of an item by its first chunk's vector, one entry per neighbour, at or above
 * `threshold`. For a conversation message the neighbours are other conversations; otherwise other
 * stand-alone items (memories, documents). Returns null while the item has no vector yet.
 */
export async function similarRecords(scope: TenantScope, services: Services, item: StoredItem, threshold: number): Promise<SimilarRecord[] | null> {
  const first = await scope.d1.prepare("SELECT id FROM chunks WHERE tenant_id = ? AND item_id = ? ORDER BY chunk_index LIMIT 1").bind(scope.tenantId, item.id).first<{ id: number }>();
  if (!first) return [];
  const vector = (await services.vectors.getVectors(scope.tenantId, [first.id])).get(first.id);
  if (!vector) return null;
  const matches = (await services.vectors.query(scope.tenantId, vector, { topK: NEIGHBOURS + 1, projects: [item.project] })).filter((m) => m.score >= threshold);
  if (matches.length === 0) return [];
  const { results } = await scope.d1
    .prepare(
      `SELECT c.id, c.item_id, i.conversation_id FROM chunks c JOIN items i ON i.id = c.item_id
       WHERE c.tenant_id = ? AND i.tenant_id = ? AND i.tier = 'active' AND c.id IN (${matches.map(() => "?").join(",")})`,
    )
    .bind(scope.tenantId, scope.tenantId, ...matches.map((m) => m.chunkId))
    .all<{ id: number; item_id: string; conversation_id: string | null }>();
  const byChunk = new Map(results.map((r) => [r.id, r]));
  const best = new Map<string, number>();
  for (const match of matches) {
    const row = byChunk.get(match.chunkId);
    if (!row || row.item_id === item.id) continue;
    const key = item.conversationId ? row.conversation_id : row.conversation_id === null ? row.item_id : null;
    if (key === null || key === item.conversationId) continue;
    best.set(key, Math.max(best.get(key) ?? -1, match.score));
  }
  return [...best].map(([id, similarity]) => ({ id, similarity: Math.round(similarity * 10_000) / 10_000 })).sort((a, b) => b.similarity - a.similarity);
}

/**
 * Links an item to its neighbours: conversations get `similar` links between conversations above
 * SIMILARITY_THRESHOLD, other items `similar_content` links above the document threshold (or the one
 * given); weight = similarity. Upserts, so running it twice changes nothing. Null = not embedded yet.
 */
export async function autoLinkItem(scope: TenantScope, services: Services, item: StoredItem, threshold?: number): Promise<SimilarRecord[] | null> {
  const { conversations } = services.config;
  const conversation = item.conversationId !== null;
  const similar = await similarRecords(scope, services, item, threshold ?? (conversation ? conversations.similarityThreshold : conversations.documentSimilarityThreshold));
  if (!similar || similar.length === 0) return similar;
  const nodeType = conversation ? "conversation" : "item";
  const statement = scope.d1.prepare(
    `INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, source_type, source_id, target_type, target_id, relationship_type) DO UPDATE SET weight = excluded.weight
       WHERE excluded.weight > links.weight
     RETURNING id`,
  );
  const now = Date.now();
  const written = await scope.d1.batch(
    similar.map((s) =>
      statement.bind(randomId("rel_"), scope.tenantId, nodeType, conversation ? item.conversationId : item.id, nodeType, s.id, conversation ? "similar" : "similar_content", s.similarity, now),
    ),
  );
  // Cached contexts change only when a link is new or stronger; a re-run that changes nothing keeps them.
  // Bumping after the write is safe: a context built in between is stored under the old generation and
  // invalidated by this bump, never served stale.
  const changed = written.some((result) => result.results.length > 0);
  if (changed && !conversation) await scope.d1.batch(bumpCacheGenerations(scope, [item.project]));
  return similar;
}

/** The auto-link job: links each item, then marks it linked (items without vectors stay pending). */
export async function autoLinkItems(scope: TenantScope, services: Services, itemIds: string[]): Promise<number> {
  const items = await readItems(scope, itemIds);
  const linked: string[] = [];
  for (const item of items.values()) {
    // Snapshot records list other segments; linking them would only inflate refcounts.
    if (item.kind === "snapshot" || (await autoLinkItem(scope, services, item)) !== null) linked.push(item.id);
  }
  for (let i = 0; i < linked.length; i += 90) {
    const ids = linked.slice(i, i + 90);
    await scope.d1.prepare(`UPDATE items SET linked_at = ? WHERE tenant_id = ? AND id IN (${ids.map(() => "?").join(",")})`).bind(Date.now(), scope.tenantId, ...ids).run();
  }
  return linked.length;
}
