import type { TenantScope } from "../../db/scope";

/**
 * Seed 004's segments are items: whatever any tool stored (memories, documents, messages, ingested
 * context) can be listed, pinned, stashed, retrieved and counted in a working set.
 */
export interface Segment {
  id: string;
  project: string;
  kind: string;
  type: string;
  content: string;
  taskId: string | null;
  createdAt: number;
  touchedAt: number;
  pinned: boolean;
  generation: string;
  gcSurvivalCount: number;
  /** Links (and context links) pointing at the item or at one of its chunks. */
  refcount: number;
  filePath: string | null;
  lineStart: number | null;
  lineEnd: number | null;
  tags: string[];
  /** The js-tiktoken count stored at write time. */
  tokens: number;
  contentHash: string;
  tier: string;
}

/** Link endpoint types that name an item by its id (links to chunks name the chunk id instead). */
export const ITEM_LINK_TYPES = ["item", "message", "memory", "segment", "document", "resource"] as const;
/** ITEM_LINK_TYPES as an SQL list, for `IN (...)`. */
export const ITEM_LINK_TYPES_SQL = ITEM_LINK_TYPES.map((t) => `'${t}'`).join(", ");

/**
 * refcount of the item aliased `i`: links whose target is the item, plus links whose target is one of its
 * chunks (seed 000's context links point a message at a chunk). Two covering-index lookups per item
 * (links_target, chunks_tenant_item), so counting a 10k-item working set is one query, no N+1.
 * Links from snapshot records are subtracted afterwards (snapshotLinkCounts).
 */
export const REFCOUNT_SQL = `((SELECT COUNT(*) FROM links l INDEXED BY links_target WHERE l.tenant_id = i.tenant_id AND l.target_type IN (${ITEM_LINK_TYPES_SQL}) AND l.target_id = i.id)
  + (SELECT COUNT(*) FROM chunks c JOIN links l ON l.tenant_id = c.tenant_id AND l.target_type = 'chunk' AND l.target_id = CAST(c.id AS TEXT)
     WHERE c.tenant_id = i.tenant_id AND c.item_id = i.id))`;

/**
 * Links from snapshot records, per target item: a snapshot's listing may be auto-linked to the segments it
 * captured, and a snapshot must not keep segments alive. One small query (links_edge by source, few
 * snapshots) run beside the refcount query; excluding them inside it would make SQLite scan every link per item.
 */
export function snapshotLinkCounts(scope: TenantScope, projects: readonly string[] | undefined): D1PreparedStatement {
  return scope.d1
    .prepare(
      `SELECT l.target_id AS id, COUNT(*) AS n FROM items s JOIN links l ON l.tenant_id = s.tenant_id AND l.source_type IN (${ITEM_LINK_TYPES_SQL}) AND l.source_id = s.id
       WHERE s.tenant_id = ? AND s.kind = 'snapshot'${projects !== undefined ? " AND s.project IN (SELECT value FROM json_each(?))" : ""} AND l.target_type IN (${ITEM_LINK_TYPES_SQL})
       GROUP BY l.target_id`,
    )
    .bind(scope.tenantId, ...(projects !== undefined ? [JSON.stringify(projects)] : []));
}

/** refcount minus links from snapshot records. */
export function withoutSnapshotLinks(refcount: number, id: string, snapshotLinks: ReadonlyMap<string, number>): number {
  return Math.max(0, refcount - (snapshotLinks.get(id) ?? 0));
}

export function snapshotLinkMap(rows: readonly Record<string, unknown>[]): Map<string, number> {
  return new Map(rows.map((r) => [r.id as string, r.n as number]));
}

export const SEGMENT_COLUMNS = `i.id, i.project, i.kind, i.type, i.content, i.task_id, i.created_at, i.touched_at, i.pinned, i.generation, i.gc_survival_count,
  i.file_path, i.line_start, i.line_end, i.tags, i.tokens, i.content_hash, i.tier`;

export type SegmentRow = {
  id: string;
  project: string;
  kind: string;
  type: string;
  content: string;
  task_id: string | null;
  created_at: number;
  touched_at: number;
  pinned: number;
  generation: string;
  gc_survival_count: number;
  file_path: string | null;
  line_start: number | null;
  line_end: number | null;
  tags: string;
  tokens: number;
  content_hash: string;
  tier: string;
  refcount: number;
};

export function toSegment(row: SegmentRow): Segment {
  return {
    id: row.id,
    project: row.project,
    kind: row.kind,
    type: row.type,
    content: row.content,
    taskId: row.task_id,
    createdAt: row.created_at,
    touchedAt: row.touched_at,
    pinned: row.pinned === 1,
    generation: row.generation,
    gcSurvivalCount: row.gc_survival_count,
    refcount: row.refcount,
    filePath: row.file_path,
    lineStart: row.line_start,
    lineEnd: row.line_end,
    tags: JSON.parse(row.tags) as string[],
    tokens: row.tokens,
    contentHash: row.content_hash,
    tier: row.tier,
  };
}

/**
 * Ids per statement when a list travels as one JSON-array parameter (`IN (SELECT value FROM json_each(?))`):
 * D1 allows 100 bound parameters per statement, not 100 ids, and this keeps each statement small.
 */
export const IDS_PER_STATEMENT = 500;

export function slices<T>(values: readonly T[], size = IDS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

/** The segment facts a write decision needs (prune, pin, delete), for ids of one project. */
export interface SegmentKey {
  id: string;
  project: string;
  kind: string;
  tier: string;
  pinned: boolean;
  tokens: number;
  conversationId: string | null;
}

/** The items columns a SegmentKey is read from, and the row they give. */
export const SEGMENT_KEY_COLUMNS = "id, project, kind, tier, pinned, tokens, conversation_id";
export interface SegmentKeyRow {
  id: string;
  project: string;
  kind: string;
  tier: string;
  pinned: number;
  tokens: number;
  conversation_id: string | null;
}

export function segmentKeyOf(r: SegmentKeyRow): SegmentKey {
  return {
    id: r.id,
    project: r.project,
    kind: r.kind,
    tier: r.tier,
    pinned: r.pinned === 1,
    tokens: r.tokens,
    conversationId: r.conversation_id,
  };
}

export async function readSegmentKeys(
  scope: TenantScope,
  project: string,
  ids: readonly string[],
): Promise<Map<string, SegmentKey>> {
  const found = new Map<string, SegmentKey>();
  const unique = [...new Set(ids)];
  if (unique.length === 0) return found;
  const results = await scope.d1.batch<SegmentKeyRow>(
    slices(unique).map((slice) =>
      scope.d1
        .prepare(
          `SELECT ${SEGMENT_KEY_COLUMNS} FROM items WHERE +tenant_id = ? AND +project = ? AND id IN (SELECT value FROM json_each(?))`,
        )
        .bind(scope.tenantId, project, JSON.stringify(slice)),
    ),
  );
  for (const result of results) for (const r of result.results) found.set(r.id, segmentKeyOf(r));
  return found;
}

/** A per-segment failure inside an otherwise successful call (seed 004's `errors`). */
export interface SegmentError {
  segment_id: string;
  code: "SEGMENT_NOT_FOUND" | "PERMISSION_DENIED" | "INVALID_PARAMETER";
  message: string;
}

export function segmentNotFound(id: string, project: string): SegmentError {
  return { segment_id: id, code: "SEGMENT_NOT_FOUND", message: `Segment '${id}' not found in project '${project}'` };
}

export function segmentPinned(id: string, action: string): SegmentError {
  return {
    segment_id: id,
    code: "PERMISSION_DENIED",
    message: `Segment '${id}' is pinned and cannot be ${action}; unpin it first (context_gc_unpin)`,
  };
}
