import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import { notFound } from "../../errors";
import type { Services } from "../../ports";
import { embedItems } from "../memory/embedding";
import { readItems, type StoredItem } from "../memory/item-reads";
import { searchChunks } from "../search/search";
import { autoLinkItem, type SimilarRecord } from "./auto-link";
import { type Reached, traverseLinks } from "./graph";

export interface GraphResult {
  itemId: string;
  content: string;
  score: number;
  relationships: { otherId: string; type: string; weight: number }[];
}

/**
 * Resources matching a query (hybrid search, one per item) with their links to other items in either
 * direction. With relationship types, keeps only those links and only resources that have one.
 */
export async function queryResourceGraph(
  scope: TenantScope,
  services: Services,
  query: string,
  types: string[] | undefined,
  projects: string[] | undefined,
  limit: number,
): Promise<GraphResult[]> {
  const hits = await searchChunks(scope, services, query, { projects }, 100);
  const best = new Map<string, (typeof hits)[number]>();
  for (const hit of hits) if (!best.has(hit.itemId)) best.set(hit.itemId, hit);
  const ids = [...best.keys()];
  const edges = new Map<string, GraphResult["relationships"]>();
  // Lists travel as JSON parameters (D1: 100 a statement); the other end must be in the scope's projects.
  const other = projectClause(scope, "o.project");
  const typeFilter = types && types.length > 0 ? ` AND l.relationship_type ${IN_JSON}` : "";
  for (let i = 0; i < ids.length; i += 500) {
    const list = JSON.stringify(ids.slice(i, i + 500));
    const { results } = await scope.d1
      .prepare(
        `SELECT l.source_id, l.target_id, l.relationship_type, l.weight FROM links l
         JOIN items o ON o.tenant_id = l.tenant_id AND o.id = CASE WHEN l.source_id ${IN_JSON} THEN l.target_id ELSE l.source_id END${other.sql}
         WHERE l.tenant_id = ? AND l.source_type = 'item' AND l.target_type = 'item'
         AND (l.source_id ${IN_JSON} OR l.target_id ${IN_JSON})${typeFilter} ORDER BY l.weight DESC`,
      )
      .bind(list, ...other.params, scope.tenantId, list, list, ...(typeFilter ? [JSON.stringify(types)] : []))
      .all<{ source_id: string; target_id: string; relationship_type: string; weight: number }>();
    for (const e of results) {
      for (const [self, other] of [
        [e.source_id, e.target_id],
        [e.target_id, e.source_id],
      ] as const) {
        if (best.has(self))
          edges.set(self, [
            ...(edges.get(self) ?? []),
            { otherId: other, type: e.relationship_type, weight: e.weight },
          ]);
      }
    }
  }
  return ids
    .map((id) => ({
      itemId: id,
      content: best.get(id)!.chunkContent,
      score: best.get(id)!.score,
      relationships: edges.get(id) ?? [],
    }))
    .filter((r) => !types || types.length === 0 || r.relationships.length > 0)
    .slice(0, limit);
}

async function requireItem(scope: TenantScope, id: string, parameter: string): Promise<StoredItem> {
  const item = (await readItems(scope, [id])).get(id);
  if (!item) throw notFound(`No document '${id}' (${parameter})`, { parameter, id });
  return item;
}

/** Items whose embed job has not run yet that auto_link_documents embeds itself before comparing. */
const EMBED_BEFORE_LINKING = 200;

/**
 * Links a document to its similar neighbours now. Items of its project still waiting for their embed
 * job (the document itself, or ones stored a moment ago) are embedded first, up to a bound.
 */
export async function autoLinkDocument(
  scope: TenantScope,
  services: Services,
  documentId: string,
  threshold: number,
): Promise<{ item: StoredItem; similar: SimilarRecord[] }> {
  const item = await requireItem(scope, documentId, "document_id");
  const { results: pending } = await scope.d1
    .prepare("SELECT id FROM items WHERE tenant_id = ? AND project = ? AND embedded_at IS NULL LIMIT ?")
    .bind(scope.tenantId, item.project, EMBED_BEFORE_LINKING)
    .all<{ id: string }>();
  if (pending.length > 0)
    await embedItems(
      scope,
      services,
      pending.map((p) => p.id),
    );
  return { item, similar: (await autoLinkItem(scope, services, item, threshold)) ?? [] };
}

export async function documentRelationships(
  scope: TenantScope,
  documentId: string,
  maxDepth: number,
): Promise<Reached[]> {
  await requireItem(scope, documentId, "document_id");
  return traverseLinks(scope, "item", new Map([[documentId, 1]]), { maxDepth, maxResults: 500 });
}
