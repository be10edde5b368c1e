// Types of oracle-observations.mjs for test/node/bench-extraction.test.ts.
import type { LocomoSample } from "./extraction.mjs";

export interface OracleTurn {
  ref: string;
  at: number;
  speaker: string;
  text: string;
  extract: boolean;
}
export interface ServedObservation {
  id: string;
  sample: string;
  speaker: string;
  text: string;
  dias: string[];
  sourceDias: string[];
  slip: string | null;
  syntax: string | null;
  cut: boolean;
}
export interface KeptFigures {
  served: number;
  kept: number;
  slipped: number;
  recovered: number;
  bySlip: Record<string, { slipped: number; recovered: number }>;
  bySyntax: Record<string, { served: number; kept: number }>;
  cut: number;
  cutKept: number;
}
export const SLIPS: string[];
export function parseOracleTurns(prompt: string): OracleTurn[];
export function diaIdsOf(cited: unknown): string[];
export function seededShare(seed: string, key: string): number;
export function createOracle(
  samples: LocomoSample[],
  options?: { slips?: number; cut?: number; wrap?: number; syntax?: number; seed?: string },
): {
  answer(prompt: string): { content: string; finishReason: "stop" | "length" };
  served(): ServedObservation[];
  observationCount: number;
  record: {
    requests: number;
    unmatchedTurns: number;
    cutAnswers: number;
    wrappedAnswers: number;
    syntaxAnswers: Record<string, number>;
  };
};
export function nearlySameText(a: string, b: string): boolean;
export function keptObservations(
  served: ServedObservation[],
  memories: { project: string; content: string; sources: string[] }[],
  turns: Map<string, { dia: string; project: string }>,
): KeptFigures;
