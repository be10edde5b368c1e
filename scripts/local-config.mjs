// The wrangler configuration for local runs (`npm run dev`, the tests): wrangler.toml without its Workers AI and
// Vectorize bindings and its tail consumer. Local runs select the local embedder and vector index, so nothing calls
// either, yet wrangler warns about both bindings on every start (usage charges, no local Vectorize). The tail consumer
// is there for the platform's CPU time, which local workerd reports as 0 (and the test pool cannot run it).
// `npm run deploy` keeps wrangler.toml.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const SOURCE = fileURLToPath(new URL("../wrangler.toml", import.meta.url));
// Beside wrangler.toml, so its relative paths (main, assets, migrations_dir, .dev.vars, .wrangler) resolve the same.
const TARGET = fileURLToPath(new URL("../wrangler.local.toml", import.meta.url));
const HEADER = "# Written by scripts/local-config.mjs from wrangler.toml for local runs; edit wrangler.toml instead.\n";

/** A TOML table header line (`[name]` or `[[name]]`) and the name it opens. */
const TABLE_HEADER = /^\s*\[\[?\s*([A-Za-z0-9_.-]+)\s*\]\]?\s*(#.*)?$/;
const REMOTE_ONLY = new Set(["ai", "vectorize"]);
/** Top-level keys of production alone, each on one line. */
const PRODUCTION_KEY = /^\s*tail_consumers\s*=/;

/**
 * `toml` without its `[ai]` table, `[[vectorize]]` blocks and `tail_consumers`; every other line as written. A dropped table runs
 * from its header to the next one, less the blank and comment lines just before that header (they introduce it).
 */
export function withoutRemoteBindings(toml) {
  const lines = toml.split("\n");
  const kept = [];
  let dropping = [];
  for (const line of lines) {
    const header = TABLE_HEADER.exec(line);
    if (header) {
      kept.push(...trailingComments(dropping));
      dropping = REMOTE_ONLY.has(header[1]) ? [line] : [];
      if (dropping.length > 0) continue;
    } else if (dropping.length > 0) {
      dropping.push(line);
      continue;
    }
    if (PRODUCTION_KEY.test(line)) continue;
    kept.push(line);
  }
  kept.push(...trailingComments(dropping));
  return kept.join("\n");
}

/** The blank and comment lines at the end of a dropped table: they belong to what follows it. */
function trailingComments(dropped) {
  let start = dropped.length;
  while (start > 1 && /^\s*(#.*)?$/.test(dropped[start - 1])) start--;
  return dropped.slice(start);
}

/** Writes wrangler.local.toml from wrangler.toml (only when it changed, so file watchers stay quiet); returns its path. */
export function writeLocalConfig() {
  const local = HEADER + withoutRemoteBindings(readFileSync(SOURCE, "utf8"));
  let current;
  try {
    current = readFileSync(TARGET, "utf8");
  } catch {}
  if (current !== local) writeFileSync(TARGET, local);
  return TARGET;
}
