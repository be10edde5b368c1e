// Types of cost.mjs for test/node/bench-cost.test.ts.
export interface CostData {
  turns: Record<string, unknown>[];
  docs: string[];
  questions: string[];
}
export interface Operation {
  name: string;
  per: string;
  count: number;
  requests: number;
  units: Record<string, number>;
  parts: Record<string, { read: number; written: number }>;
  /** The worker's CPU ms per operation (V8 samples, worker-cpu.mjs): while its calls ran, and its jobs and passes. */
  cpu: { calls: number; jobs: number };
}
export interface Measured {
  size: number;
  items: number;
  operations: Operation[];
}
export function benchData(): CostData;
export function measureCost(
  newTenant: (name: string) => Promise<unknown>,
  data: CostData,
  sizes: number[],
  counts?: Record<string, number>,
): Promise<Measured[]>;
export function costLines(measured: Measured[]): string[];
export function runCost(
  newTenant: (name: string) => Promise<unknown>,
  hooks: { release: () => Promise<void> },
): Promise<string[]>;
export function runFill(newTenant: (name: string) => Promise<unknown>): Promise<string[]>;
