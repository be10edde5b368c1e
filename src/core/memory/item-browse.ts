import { projectClause, type TenantScope } from "../../db/scope";
import { invalidParameter, notFound } from "../../errors";
import type { Services } from "../../ports";
import { bumpCacheGenerations } from "../context/cache-generation";
import { rewriteChunkContexts } from "../keyword-index/indexing";
import { ITEM_LINK_TYPES_SQL as ITEM_TYPES_SQL } from "../working-set/segments";
import { type DerivedView, derivedSql, parseDerived } from "./derived";
import { type ItemFilter, itemFilterSql } from "./item-filters";
import { queueEmbedding } from "./items";

/**
 * Items one at a time, as a person browses them: a filtered, newest-first listing, one item whole with
 * its links and lifecycle, and the two corrections a person makes (tags, importance). Every query goes
 * through the scope's project clause, so a project-limited key sees and edits its projects only.
 */

/** Characters of content a listing row carries. */
export const PREVIEW_CHARS = 300;
/** Most links one item view lists (strongest first). */
const MAX_ITEM_LINKS = 200;

export interface ItemRow {
  id: string;
  project: string;
  kind: string;
  type: string;
  preview: string;
  chars: number;
  tags: string[];
  importance: number;
  tokens: number;
  tier: string;
  pinned: boolean;
  conversationId: string | null;
  role: string | null;
  createdAt: number;
  derived: DerivedView | null;
}

/** A page of items matching the filter, newest first, with the number of all matches. */
export async function listItems(
  scope: TenantScope,
  filter: ItemFilter,
  limit: number,
  offset: number,
): Promise<{ total: number; items: ItemRow[] }> {
  const where = itemFilterSql(scope, filter);
  const [count, page] = await scope.d1.batch<Record<string, unknown>>([
    scope.d1
      .prepare(`SELECT COUNT(*) AS n FROM items i WHERE i.tenant_id = ?${where.sql}`)
      .bind(scope.tenantId, ...where.params),
    scope.d1
      .prepare(
        `SELECT i.id, i.project, i.kind, i.type, substr(i.content, 1, ${PREVIEW_CHARS}) AS preview, length(i.content) AS chars, i.tags, i.importance, i.tokens,
           i.tier, i.pinned, i.conversation_id, i.role, i.created_at, ${derivedSql("i")} AS derived
         FROM items i WHERE i.tenant_id = ?${where.sql} ORDER BY i.created_at DESC, i.id LIMIT ? OFFSET ?`,
      )
      .bind(scope.tenantId, ...where.params, limit, offset),
  ]);
  const rows = page!.results as {
    id: string;
    project: string;
    kind: string;
    type: string;
    preview: string;
    chars: number;
    tags: string;
    importance: number;
    tokens: number;
    tier: string;
    pinned: number;
    conversation_id: string | null;
    role: string | null;
    created_at: number;
    derived: string | null;
  }[];
  return {
    total: (count!.results[0] as { n: number }).n,
    items: rows.map((r) => ({
      id: r.id,
      project: r.project,
      kind: r.kind,
      type: r.type,
      preview: r.preview,
      chars: r.chars,
      tags: JSON.parse(r.tags) as string[],
      importance: r.importance,
      tokens: r.tokens,
      tier: r.tier,
      pinned: r.pinned === 1,
      conversationId: r.conversation_id,
      role: r.role,
      createdAt: r.created_at,
      derived: parseDerived(r.derived),
    })),
  };
}

export interface ItemLink {
  direction: "outgoing" | "incoming";
  relationshipType: string;
  weight: number;
  createdAt: number;
  otherId: string;
  otherKind: string;
  otherType: string;
  /** The start of the other item's text. */
  otherPreview: string;
}

export interface ItemDetail {
  id: string;
  project: string;
  kind: string;
  type: string;
  content: string;
  tags: string[];
  importance: number;
  tokens: number;
  metadata: Record<string, unknown>;
  tier: string;
  pinned: boolean;
  conversationId: string | null;
  position: number | null;
  role: string | null;
  taskId: string | null;
  filePath: string | null;
  chunkCount: number;
  generation: string;
  gcSurvivalCount: number;
  createdAt: number;
  touchedAt: number;
  embeddedAt: number | null;
  linkedAt: number | null;
  /** A keyed fact's key, and the item that superseded it (null while it is current). */
  key: string | null;
  supersededBy: string | null;
  derived: DerivedView | null;
  links: ItemLink[];
}

/**
 * One item whole, with its links in both directions: links between items, and context links (a message
 * pointing at a chunk) from or to its chunks, each with the other item's start. The other end must lie
 * in the scope's projects too. NOT_FOUND for an id the scope cannot see.
 */
export async function getItem(scope: TenantScope, id: string): Promise<ItemDetail> {
  const visible = projectClause(scope, "i.project");
  const other = projectClause(scope, "o.project");
  const otherColumns = `l.relationship_type, l.weight, l.created_at, o.id AS other_id, o.kind, o.type, substr(o.content, 1, 160) AS preview`;
  const t = scope.tenantId;
  const [itemRows, linkRows] = await scope.d1.batch<Record<string, unknown>>([
    scope.d1
      .prepare(
        `SELECT i.*, ${derivedSql("i")} AS derived,
           (SELECT COUNT(*) FROM chunks c WHERE c.tenant_id = i.tenant_id AND c.item_id = i.id) AS chunk_count
         FROM items i WHERE i.tenant_id = ? AND i.id = ?${visible.sql}`,
      )
      .bind(t, id, ...visible.params),
    scope.d1
      .prepare(
        `SELECT * FROM (
           SELECT 'outgoing' AS direction, ${otherColumns} FROM links l JOIN items o ON o.tenant_id = l.tenant_id AND o.id = l.target_id${other.sql}
           WHERE l.tenant_id = ? AND l.source_type IN (${ITEM_TYPES_SQL}) AND l.source_id = ? AND l.target_type IN (${ITEM_TYPES_SQL})
           UNION ALL
           SELECT 'incoming', ${otherColumns} FROM links l INDEXED BY links_target JOIN items o ON o.tenant_id = l.tenant_id AND o.id = l.source_id${other.sql}
           WHERE l.tenant_id = ? AND l.target_type IN (${ITEM_TYPES_SQL}) AND l.target_id = ? AND l.source_type IN (${ITEM_TYPES_SQL})
           UNION ALL
           SELECT 'outgoing', ${otherColumns} FROM links l JOIN chunks c ON c.tenant_id = l.tenant_id AND c.id = CAST(l.target_id AS INTEGER)
             JOIN items o ON o.tenant_id = c.tenant_id AND o.id = c.item_id${other.sql}
           WHERE l.tenant_id = ? AND l.source_type IN (${ITEM_TYPES_SQL}) AND l.source_id = ? AND l.target_type = 'chunk'
           UNION ALL
           SELECT 'incoming', ${otherColumns} FROM chunks c JOIN links l ON l.tenant_id = c.tenant_id AND l.target_type = 'chunk' AND l.target_id = CAST(c.id AS TEXT)
             JOIN items o ON o.tenant_id = l.tenant_id AND o.id = l.source_id${other.sql}
           WHERE c.tenant_id = ? AND c.item_id = ? AND l.source_type IN (${ITEM_TYPES_SQL})
         ) ORDER BY weight DESC, other_id LIMIT ${MAX_ITEM_LINKS}`,
      )
      .bind(...other.params, t, id, ...other.params, t, id, ...other.params, t, id, ...other.params, t, id),
  ]);
  const row = itemRows!.results[0] as Record<string, string | number | null> | undefined;
  if (!row) throw notFound(`No memory '${id}'`, { parameter: "id", id });
  const links = (linkRows!.results as Record<string, string | number>[]).map((l) => ({
    direction: l.direction as ItemLink["direction"],
    relationshipType: l.relationship_type as string,
    weight: l.weight as number,
    createdAt: l.created_at as number,
    otherId: l.other_id as string,
    otherKind: l.kind as string,
    otherType: l.type as string,
    otherPreview: l.preview as string,
  }));
  return {
    id: row.id as string,
    project: row.project as string,
    kind: row.kind as string,
    type: row.type as string,
    content: row.content as string,
    tags: JSON.parse(row.tags as string) as string[],
    importance: row.importance as number,
    tokens: row.tokens as number,
    metadata: JSON.parse(row.metadata as string) as Record<string, unknown>,
    tier: row.tier as string,
    pinned: row.pinned === 1,
    conversationId: row.conversation_id as string | null,
    position: row.position as number | null,
    role: row.role as string | null,
    taskId: row.task_id as string | null,
    filePath: row.file_path as string | null,
    chunkCount: row.chunk_count as number,
    generation: row.generation as string,
    gcSurvivalCount: row.gc_survival_count as number,
    createdAt: row.created_at as number,
    touchedAt: row.touched_at as number,
    embeddedAt: row.embedded_at as number | null,
    linkedAt: row.linked_at as number | null,
    key: row.key as string | null,
    supersededBy: row.superseded_by as string | null,
    derived: parseDerived(row.derived as string | null),
    links,
  };
}

export interface ItemEdit {
  tags?: string[];
  importance?: number;
}

/**
 * Changes an item's tags and/or importance. A stand-alone item's chunks carry its file path and tags as
 * their indexed context (items.ts chunkContext), so new tags rewrite that context in the keyword index
 * in the same batch and queue a re-embedding; the project's cached contexts are invalidated with it.
 */
export async function editItem(
  scope: TenantScope,
  services: Services,
  id: string,
  edit: ItemEdit,
): Promise<{ id: string; project: string; tags: string[]; importance: number; reindexedChunks: number }> {
  if (edit.tags === undefined && edit.importance === undefined)
    throw invalidParameter("tags", "Nothing to change: give tags, importance or both");
  const visible = projectClause(scope, "project");
  const item = await scope.d1
    .prepare(
      `SELECT id, project, tags, importance, conversation_id, file_path FROM items WHERE tenant_id = ? AND id = ?${visible.sql}`,
    )
    .bind(scope.tenantId, id, ...visible.params)
    .first<{
      id: string;
      project: string;
      tags: string;
      importance: number;
      conversation_id: string | null;
      file_path: string | null;
    }>();
  if (!item) throw notFound(`No memory '${id}'`, { parameter: "id", id });
  const tags = edit.tags ? [...new Set(edit.tags)] : (JSON.parse(item.tags) as string[]);
  const importance = edit.importance ?? item.importance;
  const statements: D1PreparedStatement[] = [];
  let reindexed = 0;
  // A message's context is its speaker and the turn it answers, not its tags: only stand-alone items change.
  if (edit.tags && item.conversation_id === null) {
    const context = [item.file_path, ...tags].filter(Boolean).join(" ");
    const { results: chunks } = await scope.d1
      .prepare("SELECT id, content, context, fts_tokens FROM chunks WHERE tenant_id = ? AND item_id = ?")
      .bind(scope.tenantId, id)
      .all<{ id: number; content: string; context: string; fts_tokens: number | null }>();
    const changed = chunks.filter((c) => c.context !== context || c.fts_tokens === null);
    statements.push(
      ...rewriteChunkContexts(
        scope,
        changed.map((c) => ({ id: c.id, content: c.content, context, ftsTokens: c.fts_tokens })),
      ),
    );
    reindexed = changed.length;
  }
  statements.push(
    scope.d1
      .prepare(
        `UPDATE items SET tags = ?, importance = ?${reindexed > 0 ? ", embedded_at = NULL" : ""} WHERE tenant_id = ? AND id = ?`,
      )
      .bind(JSON.stringify(tags), importance, scope.tenantId, id),
    ...bumpCacheGenerations(scope, [item.project]),
  );
  await scope.d1.batch(statements);
  // The context is embedded with each chunk: its vectors follow once the embed job has run.
  if (reindexed > 0) await queueEmbedding(scope, services, [id]);
  return { id, project: item.project, tags, importance, reindexedChunks: reindexed };
}
