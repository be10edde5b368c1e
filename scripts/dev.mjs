#!/usr/bin/env node
// `npm run dev`: one command from a fresh clone to a running server with a ready dev API key.
// 1. .dev.vars with local-only settings when missing; 2. local D1 migrations (control and every shard);
// 3. the dev tenant (on the first shard) and its key;
// 4. `wrangler dev` (local mode: offline, remote bindings off), with wrangler.toml's crons fired on their schedule,
//    on wrangler.local.toml (scripts/local-config.mjs: no Workers AI or Vectorize binding) unless .dev.vars picks
//    an adapter that calls them.
// Extra arguments go to wrangler dev;
// `--port` and `--persist-to` also choose where steps 2 and 3 run and what the printed URLs say.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fireCrons } from "./crons.mjs";
import { defaultVarArgs, passedVars } from "./dev-vars.mjs";
import { writeLocalConfig } from "./local-config.mjs";
import { d1Bindings, migrateAll } from "./migrate.mjs";

const wrangler = ["node_modules/wrangler/bin/wrangler.js"];
const passed = process.argv.slice(2);
/** The value of a wrangler dev option among the extra arguments (`--name value` or `--name=value`). */
function option(name) {
  const at = passed.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (at < 0) return undefined;
  return passed[at].includes("=") ? passed[at].slice(name.length + 1) : passed[at + 1];
}
const persistTo = option("--persist-to");
const origin = `http://localhost:${option("--port") ?? 8787}`;

/**
 * Local-only settings: the offline adapters (lexical embedder, D1 vector index), the dev key and the dev
 * operator token. They are not in .dev.vars.example, which lists the secrets a deployment needs (the Deploy to
 * Cloudflare button asks for those). A fresh clone gets them in a new .dev.vars; a .dev.vars that lacks some
 * (one copied from the example, say) gets the rest as `wrangler dev --var`, so local mode never reaches for
 * Workers AI or Vectorize unless .dev.vars says so.
 */
const LOCAL = {
  DEV_API_KEY: "ce_dev_local_only_0000000000000000000000000",
  ADMIN_TOKEN: "dev-admin-token",
  EMBEDDER: "local",
  VECTOR_INDEX: "local",
  EMBEDDING_DIMENSIONS: "256",
  // Browser origins allowed to call /mcp (the MCP Inspector UI runs on 6274).
  ALLOWED_ORIGINS: "http://localhost:6274,http://127.0.0.1:6274",
};
/**
 * Defaults for local runs that are not written to .dev.vars, so a `--var` (or a .dev.vars line) names another:
 * documents converted by the libraries alone (DOCUMENT_CONVERTER=local: no OCR; docs/documents.md), and
 * memory extraction with the offline rule-based model (`--var LLM:openai --var LLM_BASE_URL:<url> --var
 * LLM_MODEL:<name>` points it at an endpoint instead; docs/extraction.md), and jobs sent by each write, so what you
 * store is vector-searchable in a second or two (`--var JOB_DISPATCH:per-minute` runs production's dispatch, where
 * the minute cron sends them: within two minutes).
 */
const DEV_DEFAULTS = { LLM: "local", JOB_DISPATCH: "per-write", DOCUMENT_CONVERTER: "local" };
const fromCommandLine = passedVars(passed);

if (!existsSync(".dev.vars")) {
  writeFileSync(
    ".dev.vars",
    "# Local development only (written by `npm run dev`); never use these values in production.\n" +
      Object.entries(LOCAL)
        .map(([name, value]) => `${name}=${value}\n`)
        .join(""),
  );
  console.log("Created .dev.vars with local-only settings (offline adapters, dev key, dev admin token)");
}
const fromFile = Object.fromEntries(
  readFileSync(".dev.vars", "utf8")
    .split("\n")
    .map((line) => line.match(/^\s*([A-Z0-9_]+)\s*=\s*(.*?)\s*$/))
    .filter(Boolean)
    .map((m) => [m[1], m[2].replace(/^"(.*)"$/, "$1")]),
);
const vars = { ...LOCAL, ...fromFile };
// wrangler dev reads .dev.vars itself, and an empty value there (ADMIN_TOKEN= as in .dev.vars.example) wins
// over --var: say so rather than leave the admin API silently off.
for (const name of Object.keys(LOCAL)) {
  if (fromFile[name] !== "") continue;
  console.warn(
    `.dev.vars sets ${name} to nothing; locally that turns it off. Set ${name}=${LOCAL[name]} or remove the line.`,
  );
}
const missingLocal = Object.keys(LOCAL).filter((name) => name !== "DEV_API_KEY" && !(name in fromFile));

await migrateAll({ quiet: true, persistTo }).catch((error) => {
  console.error(error.message);
  process.exit(1);
});
const [firstShard] = (await d1Bindings()).filter((b) => b.startsWith("SHARD_"));

if (vars.DEV_API_KEY) {
  const hash = createHash("sha256").update(vars.DEV_API_KEY).digest("hex");
  const now = Date.now();
  const sql =
    `INSERT OR IGNORE INTO tenants (id, name, created_at, shard) VALUES ('dev', 'Local development', ${now}, '${firstShard}'); ` +
    `INSERT OR IGNORE INTO api_keys (id, tenant_id, name, key_hash, key_prefix, scopes, projects, created_at) ` +
    `VALUES ('key_dev', 'dev', 'dev key from .dev.vars', '${hash}', '${vars.DEV_API_KEY.slice(0, 10)}', '["read","write","admin"]', NULL, ${now}); ` +
    `UPDATE api_keys SET key_hash = '${hash}', key_prefix = '${vars.DEV_API_KEY.slice(0, 10)}', revoked_at = NULL WHERE id = 'key_dev';`;
  run([
    ...wrangler,
    "d1",
    "execute",
    "CONTROL",
    "--local",
    ...(persistTo ? ["--persist-to", persistTo] : []),
    "--command",
    sql,
  ]);
  console.log(`\nDev tenant 'dev' is ready. API key: ${vars.DEV_API_KEY}`);
  console.log(`MCP endpoint: ${origin}/mcp   JSON-RPC: ${origin}/jsonrpc`);
  console.log(`Dashboard: ${origin}/dashboard (sign in with the key above)\n`);
}

const defaults = defaultVarArgs(DEV_DEFAULTS, fromFile, fromCommandLine);
const localVars = [...missingLocal.flatMap((name) => ["--var", `${name}:${vars[name]}`]), ...defaults];
const effective = { ...vars, ...passedVars(defaults), ...fromCommandLine };
const config = (await callsWorkersAiOrVectorize(effective)) ? "wrangler.toml" : writeLocalConfig();
const dev = spawn(
  process.execPath,
  [...wrangler, "dev", "--config", config, "--local", "--test-scheduled", ...localVars, ...passed],
  { stdio: "inherit" },
);
dev.on("exit", (code) => process.exit(code ?? 0));
fireCrons(origin);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));

/** Whether the settings (wrangler.toml's vars under .dev.vars's) pick an adapter that needs the AI or VECTORIZE binding. */
async function callsWorkersAiOrVectorize(devVars) {
  const { experimental_readRawConfig } = await import("wrangler");
  const settings = { ...experimental_readRawConfig({ config: "wrangler.toml" }).rawConfig.vars, ...devVars };
  return (
    settings.EMBEDDER === "workers-ai" ||
    settings.SUMMARIZER === "workers-ai" ||
    settings.LLM === "workers-ai" ||
    settings.DOCUMENT_CONVERTER === "workers-ai" ||
    Boolean(settings.RERANK_MODEL) ||
    settings.VECTOR_INDEX === "vectorize"
  );
}

function run(args) {
  const result = spawnSync(process.execPath, args, {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, CI: "true" },
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
