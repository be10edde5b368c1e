// Types of idle-hour.mjs for test/node/bench-cost.test.ts.
export interface IdleShard {
  chunks: number;
  calls: number;
  read: number;
  written: number;
}
export function measureIdleHour(): Promise<{ rounds: number; shards: IdleShard[] }>;
export function idleHourLines(idle: { rounds: number; shards: IdleShard[] }): string[];
