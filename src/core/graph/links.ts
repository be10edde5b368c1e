import { randomId } from "../../crypto";
import { projectClause, type TenantScope } from "../../db/scope";
import { invalidParameter, notFound } from "../../errors";
import { markLinkChanges } from "../context/cache-generation";

/** seed 000's resource relationships (link_resources, query_graph). */
export const RESOURCE_RELATIONSHIPS = [
  "related_to",
  "depends_on",
  "references",
  "implements",
  "extends",
  "part_of",
  "similar_content",
  "supersedes",
  "contradicts",
  "derived_from",
  "example_of",
] as const;

export interface Link {
  id: string;
  sourceId: string;
  targetId: string;
  relationshipType: string;
  weight: number;
  createdAt: number;
}

/**
 * Creates (or reweights) a directed link between two items of the tenant. Both must exist; a link to
 * itself is refused. Cached contexts that followed either item's links are dropped (the marks go in
 * the same batch).
 */
export async function linkItems(
  scope: TenantScope,
  input: { sourceId: string; targetId: string; relationshipType: string; weight: number },
): Promise<Link> {
  if (input.sourceId === input.targetId)
    throw invalidParameter("target_id", "A record cannot be linked to itself (source_id equals target_id)");
  const visible = projectClause(scope, "project");
  const { results } = await scope.d1
    .prepare(`SELECT id FROM items WHERE tenant_id = ? AND id IN (?, ?)${visible.sql}`)
    .bind(scope.tenantId, input.sourceId, input.targetId, ...visible.params)
    .all<{ id: string }>();
  for (const [parameter, id] of [
    ["source_id", input.sourceId],
    ["target_id", input.targetId],
  ] as const) {
    if (!results.some((r) => r.id === id)) throw notFound(`No resource '${id}' (${parameter})`, { parameter, id });
  }
  const createdAt = Date.now();
  const id = randomId("rel_");
  const [upsert] = await scope.d1.batch<{ id: string; created_at: number }>([
    scope.d1
      .prepare(
        `INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at) VALUES (?, ?, 'item', ?, 'item', ?, ?, ?, ?)
         ON CONFLICT (tenant_id, source_type, source_id, target_type, target_id, relationship_type) DO UPDATE SET weight = excluded.weight
         RETURNING id, created_at`,
      )
      .bind(id, scope.tenantId, input.sourceId, input.targetId, input.relationshipType, input.weight, createdAt),
    ...markLinkChanges(scope, [input.sourceId, input.targetId]),
  ]);
  const row = upsert!.results[0]!;
  return {
    id: row.id,
    sourceId: input.sourceId,
    targetId: input.targetId,
    relationshipType: input.relationshipType,
    weight: input.weight,
    createdAt: row.created_at,
  };
}
