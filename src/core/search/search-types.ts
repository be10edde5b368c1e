import type { DerivedView } from "../memory/derived";

// What a search answers and how it can be asked (search.ts runs it).

export interface SearchHit {
  chunkId: number;
  chunkIndex: number;
  chunkContent: string;
  chunkTokens: number;
  itemId: string;
  project: string;
  kind: string;
  type: string;
  role: string | null;
  conversationId: string | null;
  position: number | null;
  tags: string[];
  metadata: Record<string, unknown>;
  importance: number;
  tier: string;
  createdAt: number;
  /** Absolute relevance in 0..1, comparable across queries (relevance.ts); hits below MIN_RELEVANCE are left out. */
  score: number;
  /** Cosine similarity between query and chunk embeddings, when the chunk is embedded. */
  similarity: number | null;
  keywordRank: number | null;
  vectorRank: number | null;
  /** A memory extraction derived: its kind, subject, validity and source turns; null for stored items. */
  derived: DerivedView | null;
  /**
   * With `foldSources`: the derived memory's source turns that ranked on their own, folded into its result
   * (fold-sources.ts), best first; absent when none did.
   */
  foldedSources?: SearchHit[];
}

export type SearchMode = "hybrid" | "keyword" | "vector";

export interface SearchOptions {
  /** hybrid (default), or one part alone. */
  mode?: SearchMode;
  /** The query's embedding when the caller already has it (saves an embedder call). */
  queryVector?: Float32Array;
  /** Hits' linked items join the results (default true; memory_context_build follows links itself). */
  expandLinks?: boolean;
  /**
   * A derived memory and its source turns share one result, the memory carrying the turns that ranked
   * (fold-sources.ts), so the slots they would have taken go to further hits. Default false: every chunk its own hit.
   */
  foldSources?: boolean;
  /** The instant relative times in the query count from ("yesterday"); default now. */
  now?: number;
  /**
   * Called when the vector part cannot be had (the embedder or the vector index failing): the search then
   * answers from its keyword part alone instead of failing, and the caller can say so.
   */
  onVectorUnavailable?: (reason: string) => void;
}
