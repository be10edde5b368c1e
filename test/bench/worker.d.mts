// Types of worker.mjs for the tests that run a bench against the real worker (test/node/bench-cost.test.ts).
export const BASE: string;
export const ADMIN_TOKEN: string;
export const INSPECTOR_URL: string;
export function startWorker(options?: { fresh?: boolean; vars?: Record<string, string>; crons?: boolean }): Promise<{
  stop(): Promise<void>;
  kill(): Promise<void>;
}>;
export function newTenant(name: string, shard?: string): Promise<unknown>;
export function admin(method: string, path: string, body?: unknown): Promise<any>;
export function sleep(ms: number): Promise<void>;
