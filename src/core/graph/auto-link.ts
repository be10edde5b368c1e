import { randomId } from "../../crypto";
import { remainingQueries } from "../../db/invocation-queries";
import { allInOneTrip } from "../../db/one-trip";
import { IN_JSON, type TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { markLinkChanges } from "../context/cache-generation";
import { type FirstVectors, markEmbedded } from "../memory/embedding";
import { readItemHeads, type StoredItem } from "../memory/item-reads";
import { batchMatches, mergeMatches } from "./batch-neighbours";

/** What linking reads of an item. */
type LinkableItem = Pick<StoredItem, "id" | "project" | "conversationId">;

const NEIGHBOURS = 20;
/** Links per insert statement (100 items × 20 neighbours fit in one; ~100 characters of JSON each); a merged job's statements go in one batch. */
const LINKS_PER_STATEMENT = 2000;

export interface SimilarRecord {
  id: string;
  similarity: number;
}

/**
 * Nearest neighbours of items by their first chunk's vector, one entry per neighbour, at or above the
 * item's threshold. For a conversation message the neighbours are other conversations; otherwise other
 * stand-alone items (memories, documents). Null for an item without a vector yet. A constant number of
 * round trips whatever the number of items: first chunks, their vectors, the vector queries (one
 * refresh of the local index, parallel Vectorize queries), the matched chunks' items. Items in `fresh` were just
 * embedded: their first vectors come from there, and they are matched with each other in memory.
 */
export async function similarRecordsMany(
  scope: TenantScope,
  services: Services,
  items: LinkableItem[],
  thresholdOf: (item: LinkableItem) => number,
  fresh: FirstVectors = new Map(),
): Promise<Map<string, SimilarRecord[] | null>> {
  const out = new Map<string, SimilarRecord[] | null>();
  if (items.length === 0) return out;
  // Items just embedded bring their first chunk and vector; the others' are read.
  const stored = items.filter((i) => !fresh.has(i.id));
  const { results: firsts } =
    stored.length === 0
      ? { results: [] }
      : await scope.d1
          .prepare(
            `SELECT item_id, MIN(id) AS id FROM chunks WHERE tenant_id = ? AND item_id ${IN_JSON} GROUP BY item_id`,
          )
          .bind(scope.tenantId, JSON.stringify(stored.map((i) => i.id)))
          .all<{ item_id: string; id: number }>();
  const firstChunk = new Map(firsts.map((r) => [r.item_id, r.id]));
  const vectors = new Map(
    firstChunk.size === 0 ? [] : await services.vectors.getVectors(scope.tenantId, [...firstChunk.values()]),
  );
  for (const [itemId, first] of fresh) {
    firstChunk.set(itemId, first.chunkId);
    vectors.set(first.chunkId, first.vector);
  }
  const queried: { item: LinkableItem; vector: Float32Array }[] = [];
  for (const item of items) {
    const chunk = firstChunk.get(item.id);
    const vector = chunk === undefined ? undefined : vectors.get(chunk);
    if (chunk === undefined) out.set(item.id, []);
    else if (!vector) out.set(item.id, null);
    else queried.push({ item, vector });
  }
  // Queries are per project (the index filters on it); a job's items are nearly always one project.
  const byProject = new Map<string, typeof queried>();
  for (const q of queried) byProject.set(q.item.project, [...(byProject.get(q.item.project) ?? []), q]);
  const matchesOf = new Map<string, { chunkId: number; score: number }[]>();
  for (const [project, group] of byProject) {
    const answers = await services.vectors.queryMany(
      scope.tenantId,
      group.map((q) => q.vector),
      { topK: NEIGHBOURS + 1, projects: [project], minScore: Math.min(...group.map((q) => thresholdOf(q.item))) },
    );
    // Vectorize does not show the vectors just upserted yet: the batch's own items find each other in memory.
    const inBatch = batchMatches(
      group.map((q) => q.item),
      fresh,
      thresholdOf,
    );
    group.forEach((q, i) =>
      matchesOf.set(
        q.item.id,
        mergeMatches(
          answers[i]!.filter((m) => m.score >= thresholdOf(q.item)),
          inBatch.get(q.item.id) ?? [],
          NEIGHBOURS + 1,
        ),
      ),
    );
  }
  const matchedChunks = [...new Set([...matchesOf.values()].flatMap((matches) => matches.map((m) => m.chunkId)))];
  const { results } =
    matchedChunks.length === 0
      ? { results: [] }
      : await scope.d1
          .prepare(
            `SELECT c.id, c.item_id, i.conversation_id FROM chunks c JOIN items i ON i.id = c.item_id
             WHERE +c.tenant_id = ? AND +i.tenant_id = ? AND i.tier = 'active' AND c.id ${IN_JSON}`,
          )
          .bind(scope.tenantId, scope.tenantId, JSON.stringify(matchedChunks))
          .all<{ id: number; item_id: string; conversation_id: string | null }>();
  const byChunk = new Map(results.map((r) => [r.id, r]));
  for (const { item } of queried) {
    const best = new Map<string, number>();
    for (const match of matchesOf.get(item.id) ?? []) {
      const row = byChunk.get(match.chunkId);
      if (!row || row.item_id === item.id) continue;
      const key = item.conversationId ? row.conversation_id : row.conversation_id === null ? row.item_id : null;
      if (key === null || key === item.conversationId) continue;
      best.set(key, Math.max(best.get(key) ?? -1, match.score));
    }
    out.set(
      item.id,
      [...best]
        .map(([id, similarity]) => ({ id, similarity: Math.round(similarity * 10_000) / 10_000 }))
        .sort((a, b) => b.similarity - a.similarity),
    );
  }
  return out;
}

/**
 * Links items to their neighbours: conversations get `similar` links between conversations above
 * SIMILARITY_THRESHOLD, other items `similar_content` links above the document threshold (or the one
 * given); weight = similarity. Upserts, so running it twice changes nothing. Null = not embedded yet.
 * Similarity is symmetric and every reader follows links both ways (traversal, search, relationships),
 * so a pair is stored once: a link whose reverse already exists at least as strong is not written.
 * All links of all items go in one batch; the items at both ends of a new or stronger item link are
 * then marked for the semantic cache (a re-run that changes nothing marks nothing).
 */
export async function autoLinkMany(
  scope: TenantScope,
  services: Services,
  items: LinkableItem[],
  threshold?: number,
  fresh?: FirstVectors,
): Promise<Map<string, SimilarRecord[] | null>> {
  const { conversations } = services.config;
  const thresholdOf = (item: LinkableItem) =>
    threshold ??
    (item.conversationId !== null ? conversations.similarityThreshold : conversations.documentSimilarityThreshold);
  const similar = await similarRecordsMany(scope, services, items, thresholdOf, fresh);
  const now = Date.now();
  const rows: string[] = [];
  // Items of one run that find each other: the pair once, at its strongest.
  const pairs = new Map<string, number>();
  for (const item of items) {
    const conversation = item.conversationId !== null;
    const source = conversation ? item.conversationId! : item.id;
    for (const s of similar.get(item.id) ?? []) {
      const pair = `${conversation ? "c" : "i"}\n${source < s.id ? `${source}\n${s.id}` : `${s.id}\n${source}`}`;
      if ((pairs.get(pair) ?? -1) >= s.similarity) continue;
      pairs.set(pair, s.similarity);
      rows.push(
        JSON.stringify([
          randomId("rel_"),
          conversation ? "conversation" : "item",
          source,
          s.id,
          conversation ? "similar" : "similar_content",
          s.similarity,
        ]),
      );
    }
  }
  if (rows.length === 0) return similar;
  // One statement per LINKS_PER_STATEMENT links (rows as one JSON parameter), all in one batch. A link
  // that already exists at least as strong, either way round, is left alone and returns no row.
  const writes: D1PreparedStatement[] = [];
  for (let i = 0; i < rows.length; i += LINKS_PER_STATEMENT) {
    writes.push(
      scope.d1
        .prepare(
          `INSERT INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, created_at)
           SELECT j.value ->> 0, ?1, j.value ->> 1, j.value ->> 2, j.value ->> 1, j.value ->> 3, j.value ->> 4, j.value ->> 5, ?2 FROM json_each(?3) j
           WHERE NOT EXISTS (SELECT 1 FROM links r WHERE r.tenant_id = ?1 AND r.source_type = j.value ->> 1 AND r.source_id = j.value ->> 3
             AND r.target_type = j.value ->> 1 AND r.target_id = j.value ->> 2 AND r.relationship_type = j.value ->> 4 AND r.weight >= j.value ->> 5)
           ON CONFLICT (tenant_id, source_type, source_id, target_type, target_id, relationship_type) DO UPDATE SET weight = excluded.weight
             WHERE excluded.weight > links.weight
           RETURNING source_type, source_id, target_id`,
        )
        .bind(scope.tenantId, now, `[${rows.slice(i, i + LINKS_PER_STATEMENT).join(",")}]`),
    );
  }
  const written = await allInOneTrip<{ source_type: string; source_id: string; target_id: string }>(scope.d1, writes);
  // Contexts follow item links only (conversation links are not traversed).
  const changed = written.flatMap((result) =>
    result.results.flatMap((r) => (r.source_type === "item" ? [r.source_id, r.target_id] : [])),
  );
  const marks = markLinkChanges(scope, changed);
  if (marks.length > 0) await scope.d1.batch(marks);
  return similar;
}

/** One item's neighbours, linked (get_similar_contexts with a threshold). */
export async function autoLinkItem(
  scope: TenantScope,
  services: Services,
  item: LinkableItem,
  threshold?: number,
): Promise<SimilarRecord[] | null> {
  return (await autoLinkMany(scope, services, [item], threshold)).get(item.id) ?? null;
}

/**
 * D1 queries a link run takes (heads, first chunks, matched chunks, the links, the marks, linked_at) and each
 * project adds (the local index reads a project's slice: a batch of 2, a reload 2 more). A run under D1's queries
 * per invocation links the projects the budget covers.
 */
export const LINK_RUN_QUERIES = 8;
export const LINK_PROJECT_QUERIES = 4;

/**
 * The auto-link job: links the items, then marks them linked (items without vectors stay pending); given the vectors
 * just made (`fresh`), marks every item embedded too. Under a
 * budget of D1 queries (the Free plan's 50), only as many projects' items as it covers, at least one project;
 * the others are returned in `left`, for the caller to queue again.
 */
export async function autoLinkItems(
  scope: TenantScope,
  services: Services,
  itemIds: string[],
  fresh?: FirstVectors,
): Promise<{ linked: number; left: string[] }> {
  // Heads, not contents: a merged job links thousands of items.
  const items = [...(await readItemHeads(scope, itemIds)).values()];
  // Snapshot records list other segments; linking them would only inflate refcounts.
  const linkable = items.filter((item) => item.kind !== "snapshot");
  const { now, later } = projectsWithinBudget(linkable);
  const similar = await autoLinkMany(scope, services, now, undefined, fresh);
  const left = new Set(later.map((item) => item.id));
  const linked = items
    .filter((item) => item.kind === "snapshot" || (!left.has(item.id) && similar.get(item.id) !== null))
    .map((item) => item.id);
  if (fresh) {
    // Just embedded (new-items.ts): marked embedded here, with their links, each row written once.
    const linkedIds = new Set(linked);
    const rest = itemIds.filter((id) => !linkedIds.has(id));
    const marks = [
      ...(linked.length > 0 ? [markEmbedded(scope, services, linked, true)] : []),
      ...(rest.length > 0 ? [markEmbedded(scope, services, rest, false)] : []),
    ];
    if (marks.length === 1) await marks[0]!.run();
    else if (marks.length > 1) await scope.d1.batch(marks);
  } else if (linked.length > 0) {
    await scope.d1
      .prepare(`UPDATE items SET linked_at = ? WHERE +tenant_id = ? AND id ${IN_JSON}`)
      .bind(Date.now(), scope.tenantId, JSON.stringify(linked))
      .run();
  }
  return { linked: linked.length, left: [...left] };
}

/** The items of as many projects (in order of first appearance, at least one) as the invocation's D1 queries left cover. */
function projectsWithinBudget(items: LinkableItem[]): { now: LinkableItem[]; later: LinkableItem[] } {
  const projects = [...new Set(items.map((item) => item.project))];
  const room = Math.max(1, Math.floor((remainingQueries() - LINK_RUN_QUERIES) / LINK_PROJECT_QUERIES));
  if (room >= projects.length) return { now: items, later: [] };
  const taken = new Set(projects.slice(0, room));
  return {
    now: items.filter((item) => taken.has(item.project)),
    later: items.filter((item) => !taken.has(item.project)),
  };
}
