// Types of extraction.mjs for test/node/bench-extraction.test.ts.
export type ToolCall = (name: string, args: Record<string, unknown>) => Promise<{ result: any; ms: number }>;
export interface LocomoSample {
  sample_id: string;
  conversation: Record<string, unknown>;
  qa: { question: string; answer?: string | number; evidence?: string[]; category: number }[];
  /** `session_<n>_observation` -> speaker -> [text, dia id(s)][] (the oracle model's answers). */
  observation?: Record<string, Record<string, [string, string | string[]][]>>;
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
  oracle: OracleFigures | null;
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
export interface OracleFigures {
  served: number;
  kept: number;
  slipped: number;
  recovered: number;
  bySlip: Record<string, { slipped: number; recovered: number }>;
  bySyntax: Record<string, { served: number; kept: number }>;
  cut: number;
  cutKept: number;
  observations: number;
  requests: number;
  cutAnswers: number;
  wrappedAnswers: number;
  syntaxAnswers: Record<string, number>;
  unmatchedTurns: number;
}
export interface OracleRecord {
  served(): unknown[];
  observationCount: number;
  record: { requests: number; unmatchedTurns: number; cutAnswers: number };
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
  oracle?: OracleRecord | null;
}): Promise<{ lines: string[]; figures: ExtractionFigures }>;
