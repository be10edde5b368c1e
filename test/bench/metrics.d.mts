// Types of metrics.mjs for the TypeScript bench scripts (test/bench/replay).
export function percentile(values: number[], p: number): number;
export function mean(values: number[]): number;
export function recallAt<T>(ranked: T[], relevant: Set<T>, k: number): number;
export function ndcgAt(ranked: string[], grades: Map<string, number>, k: number): number;
export function uniqueInOrder<T>(ids: T[]): T[];
