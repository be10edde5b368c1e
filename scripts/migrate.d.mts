// Types of migrate.mjs for the TypeScript bench scripts (test/bench/replay/replay-reads.ts).
export function d1Bindings(configPath?: string): Promise<string[]>;
export function migrateAll(options?: { remote?: boolean; persistTo?: string; quiet?: boolean }): Promise<string[]>;
