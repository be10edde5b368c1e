import { autoLinking } from "../../config";
import { QueryPieces, remainingQueries } from "../../db/invocation-queries";
import { IN_JSON, type TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { boundedGroups } from "../../shared/bounded-groups";
import { itemJobs } from "../../shared/item-jobs";
import { readItemHeads } from "./item-reads";

/**
 * Items per read (their ids travel as one JSON parameter), and the most item tokens one read holds: a
 * merged job may hold thousands of items of up to 100,000 characters, the isolate 128 MB. A job of up
 * to SMALL_JOB items reads its chunks at once, as one queued message does.
 */
const ITEMS_PER_READ = 500;
const TOKENS_PER_READ = 250_000;
const SMALL_JOB = 100;

/**
 * Embeds every chunk of the given items and upserts the vectors, then marks the items embedded.
 * Idempotent: vectors are keyed by chunk id, so a re-delivered message rewrites the same vectors.
 * Per group of items: one read, the upserts, one batch that checks the chunks still exist and marks
 * the items. Lookups by id say `+tenant_id` so SQLite walks the primary key, not all the tenant's rows.
 */
export async function embedItems(scope: TenantScope, services: Services, itemIds: string[]): Promise<number> {
  return (await embedItemsWithin(scope, services, itemIds, false)).embedded;
}

/**
 * embedItems for the queue's job: under D1's queries per invocation (the Free plan's 50) it embeds groups of
 * at most SMALL_JOB items while the queries left cover one more group as large as the largest so far, and
 * returns the items it did not reach in `left` (their link jobs are queued when they are embedded).
 */
export async function embedItemsInBudget(
  scope: TenantScope,
  services: Services,
  itemIds: string[],
): Promise<{ embedded: number; left: string[] }> {
  return embedItemsWithin(scope, services, itemIds, true);
}

/** Each item's first chunk and its vector, as embedding made it (auto-link.ts reads them before Vectorize shows them). */
export type FirstVectors = Map<string, { chunkId: number; vector: Float32Array }>;

/**
 * embedItemsInBudget for a job that links the items itself (new-items.ts): no link job is queued, the items' first
 * vectors are kept in `firsts`, after the first group `reserve` queries are left for the rest of the job, and the items
 * are not marked embedded: the job marks them with their links, in one update (markEmbedded).
 */
export async function embedItemsKeepingFirsts(
  scope: TenantScope,
  services: Services,
  itemIds: string[],
  firsts: FirstVectors,
  reserve: number,
): Promise<{ embedded: number; left: string[] }> {
  return embedItemsWithin(scope, services, itemIds, true, firsts, reserve);
}

async function embedItemsWithin(
  scope: TenantScope,
  services: Services,
  itemIds: string[],
  followBudget: boolean,
  firsts?: FirstVectors,
  reserve = 0,
): Promise<{ embedded: number; left: string[] }> {
  // A caller keeping the first vectors links the items itself.
  const queueLinks = firsts ? async () => {} : queueLinkJobs;
  let embedded = 0;
  const budgeted = followBudget && remainingQueries() !== Infinity;
  const groups = await readGroups(scope, itemIds, budgeted ? SMALL_JOB : ITEMS_PER_READ);
  const pieces = new QueryPieces(GROUP_QUERIES);
  const done: string[] = [];
  for (const [g, ids] of groups.entries()) {
    if (budgeted && g > 0 && !pieces.fits(reserve)) {
      const left = groups.slice(g).flat();
      await queueLinks(scope, services, done);
      return { embedded, left };
    }
    pieces.start();
    try {
      embedded += await embedGroup(scope, services, ids, firsts);
    } finally {
      pieces.finish();
    }
    done.push(...ids);
  }
  await queueLinks(scope, services, itemIds);
  return { embedded, left: [] };
}

/** D1 queries an embedding group takes at least: its chunks' read, a vector write, the check and mark (QueryPieces learns more). */
const GROUP_QUERIES = 4;

/**
 * The update that marks items embedded, and linked where `linked` says so or auto-linking is off (nothing will link
 * them then): marked linked, they leave the index of the waiting. One update for both writes the row once.
 */
export function markEmbedded(
  scope: TenantScope,
  services: Services,
  itemIds: string[],
  linked: boolean,
): D1PreparedStatement {
  const link = linked
    ? ", linked_at = ?1"
    : autoLinking(services.config.conversations)
      ? ""
      : ", linked_at = COALESCE(linked_at, ?1)";
  return scope.d1
    .prepare(`UPDATE items SET embedded_at = ?1${link} WHERE +tenant_id = ?2 AND id ${IN_JSON.replace("?", "?3")}`)
    .bind(Date.now(), scope.tenantId, JSON.stringify(itemIds));
}

async function queueLinkJobs(scope: TenantScope, services: Services, itemIds: string[]): Promise<void> {
  if (autoLinking(services.config.conversations) && itemIds.length > 0) {
    // The consumer merges a batch's jobs, so this run may hold thousands of items: split as writers split them.
    await services.jobs.send(itemJobs("link", scope.tenantId, itemIds));
  }
}

/** One group's chunks embedded and upserted, the items marked; how many chunks. */
async function embedGroup(
  scope: TenantScope,
  services: Services,
  ids: string[],
  firsts: FirstVectors | undefined,
): Promise<number> {
  let embedded = 0;
  const { results: chunks } = await scope.d1
    .prepare(
      `SELECT c.id, c.item_id, c.content, c.context, i.project, i.kind, i.type FROM chunks c JOIN items i ON i.id = c.item_id
       WHERE c.tenant_id = ? AND i.tenant_id = ? AND c.item_id ${IN_JSON} ORDER BY c.id`,
    )
    .bind(scope.tenantId, scope.tenantId, JSON.stringify(ids))
    .all<{
      id: number;
      item_id: string;
      content: string;
      context: string;
      project: string;
      kind: string;
      type: string;
    }>();
  for (let j = 0; j < chunks.length; j += services.embedder.maxBatch) {
    const batch = chunks.slice(j, j + services.embedder.maxBatch);
    const vectors = await services.embedder.embed(batch.map(embeddingText));
    // Chunks come in id order, so an item's first seen is its first.
    batch.forEach((c, k) => {
      if (firsts && !firsts.has(c.item_id)) firsts.set(c.item_id, { chunkId: c.id, vector: vectors[k]! });
    });
    await services.vectors.upsert(
      scope.tenantId,
      batch.map((c, k) => ({
        chunkId: c.id,
        itemId: c.item_id,
        project: c.project,
        kind: c.kind,
        type: c.type,
        values: vectors[k]!,
      })),
    );
    embedded += batch.length;
  }
  const chunkIds = chunks.map((c) => c.id);
  const [alive] = await scope.d1.batch<{ id: number }>([
    // An item deleted while its chunks were being embedded must not leave their vectors behind.
    scope.d1
      .prepare(`SELECT id FROM chunks WHERE +tenant_id = ? AND id ${IN_JSON}`)
      .bind(scope.tenantId, JSON.stringify(chunkIds)),
    ...(firsts ? [] : [markEmbedded(scope, services, ids, false)]),
  ]);
  const kept = new Set(alive!.results.map((r) => r.id));
  const gone = chunkIds.filter((id) => !kept.has(id));
  if (gone.length > 0) await services.vectors.delete(scope.tenantId, gone);
  return embedded;
}

/** What a chunk's vector is made from: its context line (a heading, a conversation's topic), then its text. */
export function embeddingText(chunk: { content: string; context: string | null }): string {
  return chunk.context ? `${chunk.context}\n${chunk.content}` : chunk.content;
}

/** The texts embedding these items would send (embeddingText of each chunk), in one read. */
export async function embeddingTexts(scope: TenantScope, itemIds: string[]): Promise<string[]> {
  const { results } = await scope.d1
    .prepare(`SELECT c.content, c.context FROM chunks c WHERE c.tenant_id = ? AND c.item_id ${IN_JSON} ORDER BY c.id`)
    .bind(scope.tenantId, JSON.stringify(itemIds))
    .all<{ content: string; context: string | null }>();
  return results.map(embeddingText);
}

/**
 * The items in order, in groups of at most ITEMS_PER_READ items and TOKENS_PER_READ tokens (an item
 * larger than that alone). Sizes come from one read of the items' heads; a small job needs none.
 */
async function readGroups(scope: TenantScope, itemIds: string[], itemsPerRead: number): Promise<string[][]> {
  if (itemIds.length <= SMALL_JOB) return itemIds.length === 0 ? [] : [itemIds];
  const heads = await readItemHeads(scope, itemIds);
  // A deleted item has no chunks left to read.
  return boundedGroups(itemIds, { count: itemsPerRead, size: TOKENS_PER_READ }, (id) => heads.get(id)?.tokens ?? 0);
}
