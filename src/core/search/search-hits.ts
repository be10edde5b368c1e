import { parseDerived } from "../memory/derived";
import { type FoldableHit, foldSources } from "./fold-sources";
import { MIN_RELEVANCE } from "./relevance";
import type { SearchRow } from "./search-rows";
import type { SearchHit } from "./search-types";

/** A search's candidate hit and what its score is made of (search.ts), and what becomes of the best. */

export type Candidate = {
  row: SearchRow;
  bm25: number;
  /**
   * The match uncapped plus relevance feedback uncapped, times the query context's multiplier: orders hits that all
   * score 1. Feedback counts here too, or it could not reorder them: on short passages most top hits score 1, and a
   * capped score leaves them tied.
   */
  strength: number;
  /** The match parts: keyword, relevance feedback (capped, and uncapped), and the fused match (keyword and vector). */
  keyword: number;
  feedback: number;
  feedbackStrength: number;
  match: number;
  keywordRank: number | null;
  vectorRank: number | null;
  similarity: number | null;
  /** The hit's own evidence (match, feedback, time, speaker), then with its neighbours' and links'. */
  own: number;
  score: number;
  /** Held at the lead's score and strength (keepLeadFirst): ranks after the lead where both are equal. */
  belowLead: boolean;
};

/**
 * The first hit that matches the query best (its match in the query's context, before any evidence from other
 * hits) stays first: feedback, neighbours and links may raise a hit that matches less well up to the lead's score,
 * not past it, so a short reply next to the best turn, echoing its words, does not take first place. Hits that
 * match as well as the lead keep their order by all evidence.
 */
export function keepLeadFirst(first: Candidate[], all: Iterable<Candidate>, ownMatch: (c: Candidate) => number): void {
  let lead: Candidate | null = null;
  let leadMatch = -Infinity;
  for (const c of first) {
    const match = ownMatch(c);
    if (match > leadMatch) [lead, leadMatch] = [c, match];
  }
  if (!lead) return;
  for (const c of all) {
    if (c !== lead && ownMatch(c) < leadMatch && c.score >= lead.score) {
      c.score = lead.score;
      c.strength = Math.min(c.strength, lead.strength);
      c.belowLead = true;
    }
  }
}

/**
 * The best keyword hits, best first: their words feed back (expansion.ts). A derived memory and its source turns say
 * one thing, so they feed back as one hit, the result they fold into (fold-sources.ts), with the text of all and the
 * best keyword part of any: as separate hits, one piece of evidence would fill the feedback's few places.
 */
export function feedbackSources(first: Candidate[]): { content: string; score: number }[] {
  const best = first.filter((c) => c.keyword >= MIN_RELEVANCE).sort((a, b) => b.keyword - a.keyword || b.bm25 - a.bm25);
  return foldSources(best, best.length, foldable).map(({ hit, folded }) => ({
    content: [hit, ...folded].map((c) => c.row.chunk_content).join("\n"),
    score: Math.max(hit.keyword, ...folded.map((c) => c.keyword)),
  }));
}

/** What folding needs of a candidate: its item, and a derived memory's source turns. */
export function foldable(c: Candidate): FoldableHit {
  return { itemId: c.row.item_id, sources: parseDerived(c.row.derived)?.sources ?? null };
}

export function toHit(c: Candidate): SearchHit {
  const row = c.row;
  return {
    chunkId: row.chunk_id,
    chunkIndex: row.chunk_index,
    chunkContent: row.chunk_content,
    chunkTokens: row.chunk_tokens,
    itemId: row.item_id,
    project: row.project,
    kind: row.kind,
    type: row.type,
    role: row.role,
    conversationId: row.conversation_id,
    position: row.position,
    tags: JSON.parse(row.tags) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    importance: row.importance,
    tier: row.tier,
    createdAt: row.created_at,
    score: round(c.score),
    similarity: c.similarity === null ? null : round(c.similarity),
    keywordRank: c.keywordRank,
    vectorRank: c.vectorRank,
    derived: parseDerived(row.derived),
  };
}

export function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
