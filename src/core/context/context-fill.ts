import { summarizeToFit } from "../../shared/extractive";
import type { TokenCounter } from "../../shared/tokens";
import type { DerivedView } from "../memory/derived";
import type { StoredItem } from "../memory/item-reads";

export interface ContextMemory {
  id: string;
  content: string;
  tokens: number;
  similarity: number;
  source: "direct" | "related" | "profile";
  summarized: boolean;
  /** A derived memory's kind, subject, validity and sources; null for a stored item. */
  derived: DerivedView | null;
  /** A source turn's derived memory, which it follows in the context. */
  sourceOf?: string;
  /** The item's kind (a document chunk is cited with its document); absent on the profile. */
  kind?: string;
}

/** A memory shorter than this is not worth summarizing into the leftover budget. */
const MIN_SUMMARY_TOKENS = 8;

/**
 * One entry of a context as ranked: a direct hit or a related item, with the source turns search folded into it (a
 * derived memory's turns that ranked themselves, each with its own score) and, for a derived memory, the rest of its
 * source turns.
 */
export interface ContextCandidate {
  item: StoredItem;
  similarity: number;
  source: "direct" | "related";
  folded: { item: StoredItem; similarity: number }[];
  /** Its other source turns, in the order they were said. */
  sources: StoredItem[];
}

export interface FilledContext {
  memories: ContextMemory[];
  used: number;
  /** Whether a ranked entry was left out or summarized to fit. */
  truncated: boolean;
}

/**
 * Fills what is left of `budget` after `used` with the candidates, in their order: each whole while it fits, else
 * summarized extractively into what is left (when `autoSummarize`). A derived memory's folded turns follow it as
 * direct hits of their own. Then, with the budget that is left, each derived memory's other source turns follow it,
 * whole, so a memory comes with the words it was derived from without displacing anything that ranked.
 */
export function fillContext(
  candidates: readonly ContextCandidate[],
  budget: number,
  used: number,
  options: { autoSummarize: boolean; query: string; counter: TokenCounter },
): FilledContext {
  const blocks: ContextMemory[][] = [];
  const placed = new Set<string>();
  let truncated = false;
  const entry = (item: StoredItem, similarity: number, source: ContextMemory["source"], sourceOf?: string) => ({
    id: item.id,
    content: item.content,
    tokens: item.tokens,
    similarity: round(similarity),
    source,
    summarized: false,
    derived: item.derived,
    kind: item.kind,
    ...(sourceOf ? { sourceOf } : {}),
  });
  /** The item whole, or summarized into what is left; null when neither fits. */
  const place = (item: StoredItem, similarity: number, source: ContextMemory["source"], sourceOf?: string) => {
    if (placed.has(item.id)) return null;
    const left = budget - used;
    if (item.tokens <= left) {
      placed.add(item.id);
      used += item.tokens;
      return entry(item, similarity, source, sourceOf);
    }
    truncated = true;
    if (!options.autoSummarize || left < MIN_SUMMARY_TOKENS) return null;
    const summary = summarizeToFit(item.content, options.query, left, options.counter);
    if (!summary) return null;
    placed.add(item.id);
    used += summary.tokens;
    return {
      ...entry(item, similarity, source, sourceOf),
      content: summary.content,
      tokens: summary.tokens,
      summarized: true,
    };
  };
  const placedBlocks: { block: ContextMemory[]; candidate: ContextCandidate }[] = [];
  for (const candidate of candidates) {
    const block: ContextMemory[] = [];
    const head = place(candidate.item, candidate.similarity, candidate.source);
    if (head) block.push(head);
    for (const turn of candidate.folded) {
      const folded = place(turn.item, turn.similarity, "direct", head ? candidate.item.id : undefined);
      if (folded) block.push(folded);
    }
    if (block.length > 0) blocks.push(block);
    if (head) placedBlocks.push({ block, candidate });
  }
  // Source turns only while they fit whole: they accompany a memory, and what did not fit is not summarized.
  for (const { block, candidate } of placedBlocks)
    for (const turn of candidate.sources)
      if (!placed.has(turn.id) && turn.tokens <= budget - used) {
        placed.add(turn.id);
        used += turn.tokens;
        block.push(entry(turn, candidate.similarity, "related", candidate.item.id));
      }
  return { memories: blocks.flat(), used, truncated };
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
