/** `toml` without its `[ai]` table and `[[vectorize]]` blocks; every other line as written (local-config.mjs). */
export function withoutRemoteBindings(toml: string): string;
/** Writes wrangler.local.toml from wrangler.toml and returns its path (local-config.mjs). */
export function writeLocalConfig(): string;
