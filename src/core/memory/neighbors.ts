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

type Row = { id: number; content: string; created_at: number; role: string | null; item_id: string; chunk_index: number; conversation_id: string | null; position: number | null; project: string };

const COLUMNS = "c.id, c.content, c.chunk_index, c.item_id, i.created_at, i.role, i.conversation_id, i.position, i.project";

/**
 * The chunks before and after a chunk, in reading order: across its conversation's messages
 * (by position, then chunk index), or within its item when it belongs to no conversation.
 */
export async function readAroundChunk(scope: TenantScope, chunkId: number, before: number, after: number): Promise<ChunkSurroundings | null> {
  const visible = projectClause(scope, "i.project");
  const anchor = await scope.d1
    .prepare(`SELECT ${COLUMNS} FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.id = ? AND c.tenant_id = ? AND i.tenant_id = ?${visible.sql}`)
    .bind(chunkId, scope.tenantId, scope.tenantId, ...visible.params)
    .first<Row>();
  if (!anchor) return null;
  const side = (direction: "before" | "after", count: number) => {
    if (count === 0) return null;
    const cmp = direction === "before" ? "<" : ">";
    const order = direction === "before" ? "DESC" : "ASC";
    return anchor.conversation_id !== null
      ? scope.d1
          .prepare(
            `SELECT ${COLUMNS} FROM chunks c JOIN items i ON i.id = c.item_id
             WHERE c.tenant_id = ?1 AND i.tenant_id = ?1 AND i.conversation_id = ?2 AND i.project = ?6 AND (i.position ${cmp} ?3 OR (i.position = ?3 AND c.chunk_index ${cmp} ?4))
             ORDER BY i.position ${order}, c.chunk_index ${order} LIMIT ?5`,
          )
          .bind(scope.tenantId, anchor.conversation_id, anchor.position, anchor.chunk_index, count, anchor.project)
      : scope.d1
          .prepare(`SELECT ${COLUMNS} FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.tenant_id = ?1 AND i.tenant_id = ?1 AND c.item_id = ?2 AND c.chunk_index ${cmp} ?3 ORDER BY c.chunk_index ${order} LIMIT ?4`)
          .bind(scope.tenantId, anchor.item_id, anchor.chunk_index, count);
  };
  const statements = [side("before", before), side("after", after)];
  const results = await scope.d1.batch<Row>(statements.filter((s): s is D1PreparedStatement => s !== null));
  const take = () => (results.shift()?.results ?? []);
  const beforeRows = statements[0] ? take().reverse() : [];
  const afterRows = statements[1] ? take() : [];
  return { anchor: view(anchor), before: beforeRows.map(view), after: afterRows.map(view), conversationId: anchor.conversation_id, project: anchor.project };
}

function view(row: Row): ChunkView {
  return { chunkId: row.id, content: row.content, createdAt: row.created_at, role: row.role };
}
