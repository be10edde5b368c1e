import type { TenantScope } from "../../db/scope";
import { ITEM_LINK_TYPES_SQL as ITEM_TYPES_SQL } from "../working-set/segments";

/**
 * The knowledge graph as nodes and edges, for drawing: every stored link between items (a context link
 * to a chunk counts as a link to the chunk's item) and between conversations, whose two ends lie in the
 * scope's projects (and in `projects`, when given). Nodes are the records that have at least one such
 * link, most connected first, at most `maxNodes`; edges are the links among the nodes returned.
 */

export interface GraphNode {
  nodeType: "item" | "conversation";
  id: string;
  project: string;
  kind: string;
  type: string;
  label: string;
  tokens: number;
  importance: number | null;
  degree: number;
}

export interface GraphEdge {
  sourceType: string;
  source: string;
  targetType: string;
  target: string;
  relationshipType: string;
  weight: number;
}

export interface KnowledgeGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  totalNodes: number;
  totalEdges: number;
}

/** Characters of an item's text its node label carries. */
const LABEL_CHARS = 80;

/**
 * ?1 tenant, ?2 the scope's projects (JSON, NULL = all), ?3 the requested projects (JSON, NULL = all),
 * ?4 relationship types (JSON, NULL = all), ?5 most nodes. Endpoint checks are primary-key lookups.
 */
const GRAPH_CTES = `
  WITH edges AS MATERIALIZED (
    SELECT CASE WHEN l.source_type = 'conversation' THEN 'conversation' ELSE 'item' END AS st, l.source_id AS s,
           CASE WHEN l.target_type = 'conversation' THEN 'conversation' ELSE 'item' END AS tt,
           CASE WHEN l.target_type = 'chunk' THEN (SELECT c.item_id FROM chunks c WHERE c.tenant_id = l.tenant_id AND c.id = CAST(l.target_id AS INTEGER))
                ELSE l.target_id END AS t,
           l.relationship_type AS rel, l.weight AS w
    FROM links l
    WHERE l.tenant_id = ?1 AND l.source_type IN (${ITEM_TYPES_SQL}, 'conversation') AND l.target_type IN (${ITEM_TYPES_SQL}, 'conversation', 'chunk')
      AND (?4 IS NULL OR l.relationship_type IN (SELECT value FROM json_each(?4)))
  ),
  visible AS MATERIALIZED (
    SELECT * FROM edges e WHERE e.t IS NOT NULL AND NOT (e.st = e.tt AND e.s = e.t)
      AND ${endpointVisible("e.st", "e.s")} AND ${endpointVisible("e.tt", "e.t")}
  ),
  degree AS MATERIALIZED (
    SELECT nt, id, COUNT(*) AS d FROM (SELECT st AS nt, s AS id FROM visible UNION ALL SELECT tt, t FROM visible)
    GROUP BY nt, id ORDER BY d DESC, id LIMIT ?5
  )`;

function endpointVisible(type: string, id: string): string {
  const project = (column: string) =>
    `(?2 IS NULL OR ${column} IN (SELECT value FROM json_each(?2))) AND (?3 IS NULL OR ${column} IN (SELECT value FROM json_each(?3)))`;
  return `(CASE ${type} WHEN 'item' THEN EXISTS (SELECT 1 FROM items i WHERE i.id = ${id} AND i.tenant_id = ?1 AND ${project("i.project")})
    ELSE EXISTS (SELECT 1 FROM conversations c WHERE c.tenant_id = ?1 AND c.id = ${id} AND ${project("c.project")}) END)`;
}

export async function knowledgeGraph(
  scope: TenantScope,
  options: { projects?: readonly string[]; relationshipTypes?: readonly string[]; maxNodes: number },
): Promise<KnowledgeGraph> {
  const json = (list: readonly string[] | null | undefined) => (list && list.length > 0 ? JSON.stringify(list) : null);
  const params = [
    scope.tenantId,
    json(scope.projects),
    json(options.projects),
    json(options.relationshipTypes),
    options.maxNodes,
  ];
  const [nodeRows, edgeRows] = await scope.d1.batch<Record<string, string | number | null>>([
    scope.d1
      .prepare(
        `${GRAPH_CTES}
         SELECT d.nt, d.id, d.d, COALESCE(i.project, c.project) AS project, i.kind, i.type, substr(i.content, 1, ${LABEL_CHARS}) AS label,
           COALESCE(i.tokens, c.tokens) AS tokens, i.importance,
           (SELECT COUNT(*) FROM visible) AS total_edges,
           (SELECT COUNT(*) FROM (SELECT st, s FROM visible UNION SELECT tt, t FROM visible)) AS total_nodes
         FROM degree d
         LEFT JOIN items i ON d.nt = 'item' AND i.id = d.id AND i.tenant_id = ?1
         LEFT JOIN conversations c ON d.nt = 'conversation' AND c.tenant_id = ?1 AND c.id = d.id
         ORDER BY d.d DESC, d.id`,
      )
      .bind(...params),
    scope.d1
      .prepare(
        `${GRAPH_CTES}
         SELECT v.st, v.s, v.tt, v.t, v.rel, v.w FROM visible v
         JOIN degree a ON a.nt = v.st AND a.id = v.s JOIN degree b ON b.nt = v.tt AND b.id = v.t
         ORDER BY v.w DESC`,
      )
      .bind(...params),
  ]);
  const rows = nodeRows!.results;
  const nodes: GraphNode[] = rows.map((r) => {
    const conversation = r.nt === "conversation";
    return {
      nodeType: conversation ? "conversation" : "item",
      id: r.id as string,
      project: r.project as string,
      kind: conversation ? "conversation" : (r.kind as string),
      type: conversation ? "conversation" : (r.type as string),
      label: conversation ? (r.id as string) : (r.label as string),
      tokens: (r.tokens as number | null) ?? 0,
      importance: conversation ? null : (r.importance as number),
      degree: r.d as number,
    };
  });
  const edges: GraphEdge[] = edgeRows!.results.map((e) => ({
    sourceType: e.st as string,
    source: e.s as string,
    targetType: e.tt as string,
    target: e.t as string,
    relationshipType: e.rel as string,
    weight: e.w as number,
  }));
  return {
    nodes,
    edges,
    totalNodes: (rows[0]?.total_nodes as number) ?? 0,
    totalEdges: (rows[0]?.total_edges as number) ?? 0,
  };
}
