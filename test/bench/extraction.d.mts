// Types of extraction.mjs for test/node/bench-extraction.test.ts.
export type ToolCall = (name: string, args: Record<string, unknown>) => Promise<{ result: any; ms: number }>;
export interface LocomoSample {
  sample_id: string;
  conversation: Record<string, unknown>;
  qa: { question: string; answer?: string | number; evidence?: string[]; category: number }[];
}
export interface WaitOptions {
  pollMs?: number;
  quietMs?: number;
  timeoutMs?: number;
}
export interface ExtractionProgress {
  conversations: number;
  unread: number;
  windows: {
    id: string;
    status?: string;
    calls: number | null;
    model: string | null;
    tokensIn: number;
    tokensOut: number;
    neurons: number;
    latencyMs: number;
  }[];
}
export interface Recall {
  n: number;
  turns: number;
  derived: number;
}
export interface ExtractionFigures {
  turns: number;
  sessions: number;
  recall: Record<"1" | "2" | "3" | "4" | "5" | "all", Recall>;
  derivedShare: number;
  onlyThroughDerived: number;
  memoriesByKind: Record<string, number>;
  events: Record<"added" | "duplicate" | "superseded" | "failed" | "dropped" | "deferred", number>;
  cappedHistories: number;
  cost: {
    source: string;
    windows: number;
    failedWindows: number;
    calls: number | null;
    models: string[];
    tokensInPerTurn: number;
    tokensOutPerTurn: number;
    neuronsPerTurn: number;
    latencyP50: number;
    latencyP95: number;
  };
  waited: { seconds: number; unread: number; exact: boolean; timedOut: boolean };
}
export const CATEGORIES: Record<string, string>;
export function runExtraction(newTenant: unknown, context: { release: () => Promise<void> }): Promise<string[]>;
export function measureExtraction(options: {
  call: ToolCall;
  callMany?: (calls: [string, Record<string, unknown>][]) => Promise<any[]>;
  samples: LocomoSample[];
  progress?: () => Promise<ExtractionProgress>;
  settle?: () => Promise<number>;
  modelLabel?: string;
  wait?: WaitOptions;
}): Promise<{ lines: string[]; figures: ExtractionFigures }>;
