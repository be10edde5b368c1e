import { projectClause, type TenantScope } from "../../db/scope";

export interface ChunkView {
  chunkId: number;
  content: string;
  createdAt: number;
  role: string | null;
}

export interface ChunkSurroundings {
  anchor: ChunkView;
  before: ChunkView[];
  after: ChunkView[];
  conversationId: string | null;
  project: string;
}

type Row = {
  side: "anchor" | "before" | "after";
  id: number;
  content: string;
  created_at: number;
  role: string | null;
  conversation_id: string | null;
  project: string;
  position: number | null;
  chunk_index: number;
};

const COLUMNS = "c.id, c.content, i.created_at, i.role, i.conversation_id, i.project, i.position, c.chunk_index";

/**
 * Chunks on one side of the anchor `a`, nearest first: across its conversation's messages (by
 * position, then chunk index), or within its item when it belongs to no conversation. CROSS JOIN
 * fixes the join order (anchor, then the conversation's items by position, then their chunks), so
 * each branch reads a range of an index, never the tenant's chunks.
 */
const side = (name: "before" | "after", limit: string) => {
  const cmp = name === "before" ? "<" : ">";
  const order = name === "before" ? "DESC" : "ASC";
  return `
    SELECT * FROM (SELECT '${name}' AS side, ${COLUMNS} FROM a CROSS JOIN items i CROSS JOIN chunks c
      WHERE i.tenant_id = ?2 AND i.conversation_id = a.conversation_id AND i.project = a.project AND i.position ${cmp}= a.position
        AND c.tenant_id = ?2 AND c.item_id = i.id AND (i.position ${cmp} a.position OR c.chunk_index ${cmp} a.chunk_index)
      ORDER BY i.position ${order}, c.chunk_index ${order} LIMIT ${limit})
    UNION ALL
    SELECT * FROM (SELECT '${name}' AS side, ${COLUMNS} FROM a CROSS JOIN chunks c CROSS JOIN items i
      WHERE a.conversation_id IS NULL AND c.tenant_id = ?2 AND c.item_id = a.item_id AND c.chunk_index ${cmp} a.chunk_index AND i.id = c.item_id
      ORDER BY c.chunk_index ${order} LIMIT ${limit})`;
};

/**
 * The chunks before and after a chunk, in reading order: across its conversation's messages
 * (by position, then chunk index), or within its item when it belongs to no conversation. One query.
 */
export async function readAroundChunk(
  scope: TenantScope,
  chunkId: number,
  before: number,
  after: number,
): Promise<ChunkSurroundings | null> {
  const visible = projectClause(scope, "i.project");
  const { results } = await scope.d1
    .prepare(
      `WITH a AS (
         SELECT c.id, c.content, c.chunk_index, c.item_id, i.created_at, i.role, i.conversation_id, i.position, i.project
         FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.id = ?1 AND c.tenant_id = ?2 AND i.tenant_id = ?2${visible.sql.replace("?", "?5")}
       )
       SELECT 'anchor' AS side, id, content, created_at, role, conversation_id, project, position, chunk_index FROM a
       UNION ALL ${side("before", "?3")}
       UNION ALL ${side("after", "?4")}`,
    )
    .bind(chunkId, scope.tenantId, before, after, ...visible.params)
    .all<Row>();
  const anchor = results.find((r) => r.side === "anchor");
  if (!anchor) return null;
  const inReadingOrder = (name: Row["side"]) =>
    results
      .filter((r) => r.side === name)
      .sort((x, y) => (x.position ?? 0) - (y.position ?? 0) || x.chunk_index - y.chunk_index);
  const beforeRows = inReadingOrder("before");
  const afterRows = inReadingOrder("after");
  return {
    anchor: view(anchor),
    before: beforeRows.map(view),
    after: afterRows.map(view),
    conversationId: anchor.conversation_id,
    project: anchor.project,
  };
}

function view(row: Row): ChunkView {
  return { chunkId: row.id, content: row.content, createdAt: row.created_at, role: row.role };
}
