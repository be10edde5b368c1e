import type { TenantScope } from "../../db/scope";

/** Frontier ids per statement; the list travels as one JSON parameter. */
const IDS_PER_STATEMENT = 500;
/** The table holding each node type, for checking that the other end of an edge is in the scope. */
const NODE_TABLES: Record<string, string> = { item: "items", conversation: "conversations" };

export interface Reached {
  id: string;
  depth: number;
  /** Product of the start score and the link weights along the best path. */
  score: number;
  /** Ids from a start node to this one. */
  path: string[];
  /** Type and weight of the last edge on that path. */
  relationshipType: string;
  weight: number;
}

/**
 * Breadth-first traversal of links between records of one type, in both directions, depth-limited.
 * Each node is reached once (at its shallowest depth, best score there), so cycles terminate.
 */
export async function traverseLinks(
  scope: TenantScope,
  nodeType: string,
  starts: Map<string, number>,
  options: { maxDepth: number; maxResults: number },
): Promise<Reached[]> {
  const visited = new Set(starts.keys());
  const reached: Reached[] = [];
  let frontier = [...starts].map(([id, score]) => ({ id, score, path: [id] }));
  for (
    let depth = 1;
    depth <= options.maxDepth && frontier.length > 0 && reached.length < options.maxResults;
    depth++
  ) {
    const byId = new Map(frontier.map((f) => [f.id, f]));
    const next = new Map<string, Reached>();
    for (const edge of await edgesOf(scope, nodeType, [...byId.keys()])) {
      for (const [from, to] of [
        [edge.source_id, edge.target_id],
        [edge.target_id, edge.source_id],
      ] as const) {
        const parent = byId.get(from);
        if (!parent || visited.has(to)) continue;
        const score = parent.score * edge.weight;
        const current = next.get(to);
        if (!current || score > current.score)
          next.set(to, {
            id: to,
            depth,
            score,
            path: [...parent.path, to],
            relationshipType: edge.relationship_type,
            weight: edge.weight,
          });
      }
    }
    const level = [...next.values()].sort((a, b) => b.score - a.score).slice(0, options.maxResults - reached.length);
    for (const node of level) visited.add(node.id);
    reached.push(...level);
    frontier = level;
  }
  return reached;
}

async function edgesOf(scope: TenantScope, nodeType: string, ids: string[]) {
  const out: { source_id: string; target_id: string; relationship_type: string; weight: number }[] = [];
  const table = NODE_TABLES[nodeType];
  // A project-limited scope follows only edges whose other end lies in one of its projects.
  const visible = (column: string) =>
    scope.projects === null || !table
      ? ""
      : ` AND EXISTS (SELECT 1 FROM ${table} o WHERE o.tenant_id = ?1 AND o.id = ${column} AND o.project IN (SELECT value FROM json_each(?4)))`;
  const projects = scope.projects === null || !table ? [] : [JSON.stringify(scope.projects)];
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
    // Two index lookups (links_edge by source, links_target by target) rather than one OR scan.
    const { results } = await scope.d1
      .prepare(
        `SELECT source_id, target_id, relationship_type, weight FROM links WHERE tenant_id = ?1 AND source_type = ?2 AND target_type = ?2
           AND source_id IN (SELECT value FROM json_each(?3))${visible("links.target_id")}
         UNION ALL
         SELECT source_id, target_id, relationship_type, weight FROM links WHERE tenant_id = ?1 AND target_type = ?2 AND source_type = ?2
           AND target_id IN (SELECT value FROM json_each(?3))${visible("links.source_id")}`,
      )
      .bind(scope.tenantId, nodeType, JSON.stringify(ids.slice(i, i + IDS_PER_STATEMENT)), ...projects)
      .all<{ source_id: string; target_id: string; relationship_type: string; weight: number }>();
    out.push(...results);
  }
  return out;
}
