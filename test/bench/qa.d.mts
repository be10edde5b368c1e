// Types of qa.mjs for test/node/bench-extraction.test.ts.
import type { ExtractionProgress, LocomoSample, ToolCall, WaitOptions } from "./extraction.mjs";

export interface QaRow {
  sample: string;
  category: number;
  question: string;
  gold: string | null;
  answer: string;
  lenient: boolean | null;
  strict: boolean | null;
  f1: number | null;
  abstained: boolean;
  context_tokens: number;
  context_ids: string[];
  evidence_in_context: number;
}
export interface Accuracy {
  n: number;
  lenient: number;
  strict: number;
}
export interface QaFigures {
  accuracy: Record<"1" | "2" | "3" | "4" | "all", Accuracy>;
  adversarial: { n: number; abstained: number };
  abstainedOnScored: number;
  evidenceInContext: number;
  contextTokens: number;
  contextMemories: number;
  contextDerived: number;
  retrievalP50: number;
  retrievalP95: number;
}
export function runQa(newTenant: unknown, context: { release: () => Promise<void> }): Promise<string[]>;
export function measureQa(options: {
  call: ToolCall;
  samples: LocomoSample[];
  answer: (asked: { question: string; context: string }) => Promise<string>;
  judge: (asked: { question: string; gold: string; answer: string }) => Promise<boolean>;
  budget?: number;
  outFile?: string;
  concurrency?: number;
  limit?: number;
  progress?: () => Promise<ExtractionProgress>;
  settle?: () => Promise<number>;
  wait?: WaitOptions;
  labels?: { models?: string; extraction?: string };
}): Promise<{ lines: string[]; figures: QaFigures; rows: QaRow[] }>;
