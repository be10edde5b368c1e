import type { FirstVectors } from "../memory/embedding";

/** A chunk a query vector matched, as the index answers it. */
export interface ChunkMatch {
  chunkId: number;
  score: number;
}

/** What a batch item needs to be compared: its id, conversation and first chunk's fresh vector. */
interface BatchItem {
  id: string;
  conversationId: string | null;
}

/**
 * Most vector pairs one job compares in memory (about 150 M multiply-adds at 768 dimensions): a larger batch of one
 * project compares its first items only, and its later items find each other once Vectorize shows them (a relink).
 */
export const PAIR_LIMIT = 200_000;

/**
 * Matches among a batch's own items by their fresh vectors: Vectorize shows a vector seconds after its upsert, so a job
 * that embeds and links at once would not find the batch's items by querying. Only pairs that could become a link
 * are compared: two stand-alone items, or turns of two different conversations.
 */
export function batchMatches<T extends BatchItem>(
  items: readonly T[],
  fresh: FirstVectors,
  thresholdOf: (item: T) => number,
): Map<string, ChunkMatch[]> {
  const out = new Map<string, ChunkMatch[]>();
  const present = items.filter((item) => fresh.has(item.id));
  let pairs = 0;
  for (let i = 0; i < present.length && pairs < PAIR_LIMIT; i++) {
    const a = present[i]!;
    const va = fresh.get(a.id)!;
    for (let j = i + 1; j < present.length && pairs < PAIR_LIMIT; j++) {
      const b = present[j]!;
      if ((a.conversationId === null) !== (b.conversationId === null)) continue;
      if (a.conversationId !== null && a.conversationId === b.conversationId) continue;
      pairs++;
      const vb = fresh.get(b.id)!;
      const score = cosine(va.vector, vb.vector);
      if (score >= thresholdOf(a)) push(out, a.id, { chunkId: vb.chunkId, score });
      if (score >= thresholdOf(b)) push(out, b.id, { chunkId: va.chunkId, score });
    }
  }
  return out;
}

function push(out: Map<string, ChunkMatch[]>, id: string, match: ChunkMatch): void {
  const list = out.get(id);
  if (list) list.push(match);
  else out.set(id, [match]);
}

/** Cosine similarity, as Vectorize's cosine index scores it (an embedder's vectors need not be unit length). */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Both answers for one item: each chunk once at its best score, best first, at most `topK`. */
export function mergeMatches(a: readonly ChunkMatch[], b: readonly ChunkMatch[], topK: number): ChunkMatch[] {
  const best = new Map<number, number>();
  for (const m of [...a, ...b]) best.set(m.chunkId, Math.max(best.get(m.chunkId) ?? -Infinity, m.score));
  return [...best]
    .map(([chunkId, score]) => ({ chunkId, score }))
    .sort((x, y) => y.score - x.score)
    .slice(0, topK);
}
