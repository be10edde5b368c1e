import { embeddingTexts } from "../core/memory/embedding";
import { remainingQueries } from "../db/invocation-queries";
import type { TenantScope } from "../db/scope";
import type { Embedder } from "../ports";

/**
 * Embedding calls shared by a queue batch's tenants. Workers AI takes 3,000 embedding requests a minute by default and
 * a call takes up to 32 texts (qwen3), but each tenant's embed jobs run as their own group: a batch of one-item writes
 * from 30 tenants would make 30 calls. Before the groups run, the texts of the batch's small embed groups are read
 * (one query a group) and embedded together, `maxBatch` a call; each group's embedder then finds its texts here and
 * calls only for the rest (a chunk edited in between). Bounded: groups of at most SMALL_GROUP items (a read of up to
 * ~3 MB of text; larger groups fill their own calls) and SHARED_TEXTS texts in all, and only with the D1 queries to
 * spare (the re-read is one query a group; the Free plan's 50 are left to the jobs).
 */
const SMALL_GROUP = 32;
const SHARED_TEXTS = 256;
const SPARE_QUERIES = 200;

export interface EmbedGroup {
  scope: TenantScope;
  itemIds: string[];
}

/** The shared vectors by text; empty when there is nothing to share (fewer than two groups) or no room for it. */
export async function shareEmbeddings(groups: EmbedGroup[], embedder: Embedder): Promise<Map<string, Float32Array>> {
  const shared = new Map<string, Float32Array>();
  const small = groups.filter((g) => g.itemIds.length > 0 && g.itemIds.length <= SMALL_GROUP);
  if (small.length < 2 || remainingQueries() < SPARE_QUERIES + small.length) return shared;
  const texts = new Set<string>();
  for (const group of small) {
    const own = await embeddingTexts(group.scope, group.itemIds);
    if (texts.size + own.length > SHARED_TEXTS) break;
    for (const text of own) texts.add(text);
  }
  const all = [...texts];
  for (let i = 0; i < all.length; i += embedder.maxBatch) {
    const batch = all.slice(i, i + embedder.maxBatch);
    const vectors = await embedder.embed(batch);
    batch.forEach((text, k) => shared.set(text, vectors[k]!));
  }
  return shared;
}

/** The embedder with the shared vectors in front: texts found there cost no call; the others are embedded as before. */
export function withSharedEmbeddings(embedder: Embedder, shared: Map<string, Float32Array>): Embedder {
  if (shared.size === 0) return embedder;
  return {
    name: embedder.name,
    dimensions: embedder.dimensions,
    semantic: embedder.semantic,
    maxBatch: embedder.maxBatch,
    async embed(texts, purpose) {
      // Queries are embedded differently (asymmetric models); only documents were shared.
      if (purpose === "query") return embedder.embed(texts, purpose);
      const missing = texts.filter((t) => !shared.has(t));
      const fresh = missing.length > 0 ? await embedder.embed(missing, purpose) : [];
      const byText = new Map(missing.map((t, i) => [t, fresh[i]!]));
      return texts.map((t) => shared.get(t) ?? byText.get(t)!);
    },
  };
}
