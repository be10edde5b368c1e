// Types of folds.mjs for the TypeScript bench scripts (test/bench/replay).
export interface Folds {
  k: number;
  foldOf: Map<string, number>;
  members: string[][];
}
export type Groups = Record<string, (qa: { category: number | string }) => boolean>;
export interface FoldFigure {
  validation: Record<string, number>;
  tuning: Record<string, number>;
}
export function assignFolds(samples: { sample_id: string }[], k?: number): Folds;
export function groupsOf(categories: Record<string, string>): Groups;
export function foldFigures(
  questions: { project: string; category: number | string }[],
  scores: number[],
  folds: Folds,
  groups: Groups,
): FoldFigure[];
export function summarize(
  figures: FoldFigure[],
  group: string,
): { validation: number; min: number; max: number; tuning: number; worstGap: number; folds: number };
