#!/usr/bin/env node
// `npm run db:migrate -- --local | --remote [--persist-to DIR]`: applies migrations to the control database
// and to every data shard that wrangler.toml binds (each D1 binding's own migrations_dir), through
// `wrangler d1 migrations apply`, which records what it applied; then gives each shard that has none its
// identity (its name and the lowest free ordinal: its chunk id range, src/control/shard-identity.ts). Shards
// are found in wrangler.toml, so a new shard needs no change here.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { identitySql } from "../src/control/shard-identity.ts";

/** CONTEXT_EDGE_WRANGLER names another wrangler entry script: the deploy tests' fake account (test/fixtures). */
const WRANGLER =
  process.env.CONTEXT_EDGE_WRANGLER ??
  fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

/** The D1 bindings of wrangler.toml, the control database first. */
export async function d1Bindings(configPath = "wrangler.toml") {
  const { experimental_readRawConfig } = await import("wrangler");
  const { rawConfig } = experimental_readRawConfig({ config: configPath });
  const bindings = (rawConfig.d1_databases ?? []).map((d) => d.binding);
  return bindings.sort((a, b) =>
    a === "CONTROL" ? -1 : b === "CONTROL" ? 1 : a.localeCompare(b, "en", { numeric: true }),
  );
}

/**
 * Applies every database's migrations, one database at a time (locally the databases share miniflare's state
 * directory, and two wrangler processes writing it at once meet SQLITE_BUSY).
 */
export async function migrateAll({ remote = false, persistTo, quiet = false } = {}) {
  const bindings = await d1Bindings();
  const where = [remote ? "--remote" : "--local", ...(persistTo ? ["--persist-to", persistTo] : [])];
  await sequentially(bindings, (binding) => wrangler(["d1", "migrations", "apply", binding, ...where], quiet));
  const shards = bindings.filter((b) => b.startsWith("SHARD_"));
  const read = async (shard) =>
    JSON.parse(
      await wrangler(
        ["d1", "execute", shard, ...where, "--json", "--command", "SELECT ordinal FROM shard_identity"],
        true,
      ),
    )[0].results;
  const identities = await sequentially(shards, read);
  const used = new Set(identities.flat().map((r) => r.ordinal));
  const unnamed = shards.filter((_, i) => identities[i].length === 0);
  let ordinal = 0;
  const assigned = unnamed.map((shard) => {
    while (used.has(ordinal)) ordinal++;
    used.add(ordinal);
    return [shard, ordinal];
  });
  const name = ([shard, n]) => wrangler(["d1", "execute", shard, ...where, "--command", identitySql(shard, n)], true);
  await sequentially(assigned, name);
  return bindings;
}

async function sequentially(items, run) {
  const out = [];
  for (const item of items) out.push(await run(item));
  return out;
}

/** Runs wrangler; resolves with what it printed to stdout, rejects with everything it printed. */
function wrangler(args, quiet) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRANGLER, ...args], {
      stdio: ["ignore", quiet ? "pipe" : "inherit", quiet ? "pipe" : "inherit"],
      env: { ...process.env, CI: "true" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d) => (stdout += d));
    child.stderr?.on("data", (d) => (stderr += d));
    child.on("exit", (code) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`wrangler ${args.slice(0, 3).join(" ")} failed (exit ${code})\n${stdout}${stderr}`)),
    );
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const remote = args.includes("--remote");
  if (!remote && !args.includes("--local")) {
    console.error("usage: npm run db:migrate -- --local | --remote [--persist-to DIR]");
    process.exit(2);
  }
  const at = args.indexOf("--persist-to");
  try {
    const bindings = await migrateAll({ remote, persistTo: at >= 0 ? args[at + 1] : undefined });
    console.log(`Migrations applied (${remote ? "remote" : "local"}): ${bindings.join(", ")}`);
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
