// Types of documents-scoring.mjs for test/node/bench-documents.test.ts.
import type { BenchDocument } from "./documents-corpus.mjs";

export interface Hit {
  item_id?: string;
  content: string;
  document?: { document_id: string; section: string } | null;
}
export interface HitCounts {
  hits: number;
  bySection: number;
  byOverlap: number;
  unmapped: number;
  agree: number;
}
export interface Score {
  ndcg: number;
  recall: number;
}
export const HOLDS_SHARE: number;
export function words(text: string): string[];
export function wordPairs(text: string): Set<string>;
export function passagesByOverlap(chunkText: string, pairs: Set<string>[]): number[];
export function passageBySection(section: string, passageCount: number): number | null;
export function passageRanker(
  documents: Map<string, BenchDocument>,
  rule: "section" | "overlap",
): { rank(results: Hit[]): string[]; counts: HitCounts };
export function scoreRankings(rankings: Map<string, string[]>, qrels: Map<string, Map<string, number>>): Score;
export function targetLine(a: Score, b: Score, c: Score): string;
