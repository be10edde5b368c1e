// Types of conversation-ingest.mjs for test/node/bench-extraction.test.ts.
export interface StoredTurn {
  dia: string;
  speaker: string;
  at: number;
  project: string;
}
export const DERIVED_SOURCES_CREDITED: number;
export function coveredTurns(
  results: {
    item_id?: string;
    id?: string;
    derived?: boolean;
    sources?: string[];
    folded_sources?: { item_id: string }[];
  }[],
  turns: Map<string, StoredTurn>,
): Set<string>;
export function evidenceRecall(evidence: Set<string>, covered: Set<string>): number;
export function locomoQuestions(
  samples: import("./extraction.mjs").LocomoSample[],
): { question: string; category: number; project: string; evidence: Set<string> }[];
