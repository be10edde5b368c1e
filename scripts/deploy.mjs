#!/usr/bin/env node
// `npm run deploy`: from a fresh Cloudflare account (logged in with `npx wrangler login`) to a working MCP URL.
// Finds or creates every resource wrangler.toml binds (scripts/deploy-plan.mjs), applies the D1 migrations,
// generates ADMIN_TOKEN when the Worker has none (printed once), deploys, runs the smoke test against the new
// URL, and prints the MCP URL and how to make the first key. A second run creates nothing and says so.
// `--dry-run` prints the plan offline. On a failure it says what failed, what to do, and what exists so far.
// Options: --dry-run, --skip-smoke. Env: CONTEXT_EDGE_ADMIN_TOKEN (the existing token, for the smoke test).
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { adminClient } from "./admin-client.mjs";
import { deployPlan, formatPlan, readWranglerConfig, secretNames } from "./deploy-plan.mjs";
import { migrateAll } from "./migrate.mjs";
import { smoke } from "./smoke.mjs";

/** CONTEXT_EDGE_WRANGLER names another wrangler entry script: the tests' fake account (test/fixtures/fake-wrangler.mjs). */
const WRANGLER =
  process.env.CONTEXT_EDGE_WRANGLER ??
  fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
const NOT_FOUND = /not[ _]found|does not exist|couldn't find|could not find|\b7404\b|\b10007\b/i;

class DeployError extends Error {}

function wrangler(args) {
  const run = spawnSync(process.execPath, [WRANGLER, ...args], {
    encoding: "utf8",
    env: { ...process.env, CI: "true" },
  });
  return { ok: run.status === 0, out: `${run.stdout ?? ""}${run.stderr ?? ""}`.trim(), stdout: run.stdout ?? "" };
}

/** The last lines of what wrangler printed, for an error message. */
const tail = (text) => text.split("\n").filter(Boolean).slice(-4).join("\n    ");

export async function deploy({ dryRun = false, skipSmoke = false, log = console.log } = {}) {
  const plan = deployPlan(await readWranglerConfig(), secretNames());
  if (dryRun) {
    for (const line of formatPlan(plan)) log(line);
    return { ok: true, created: [] };
  }
  const existing = [];
  const created = [];
  const fail = (what, output, todo) => {
    const so = [...existing.map((r) => `${r} (existed)`), ...created.map((r) => `${r} (created now)`)];
    throw new DeployError(
      `${what}\n    ${tail(output)}\n  What to do: ${todo}\n  What exists so far: ${so.length > 0 ? so.join(", ") : "nothing"}. Running \`npm run deploy\` again keeps it and goes on.`,
    );
  };

  const who = wrangler(["whoami", "--json"]);
  if (!who.ok)
    fail(
      "Not logged in to Cloudflare.",
      who.out,
      "run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN), then `npm run deploy` again. Nothing was created.",
    );

  /** Finds a resource with `lookup` or creates it with `create`; a lookup that fails for another reason than absence stops the run. */
  const ensure = (label, lookup, create, todo) => {
    const found = wrangler(lookup);
    if (found.ok) {
      existing.push(label);
      log(`  exists   ${label}`);
      return { found: true, stdout: found.stdout };
    }
    if (!NOT_FOUND.test(found.out)) fail(`Could not look up ${label}.`, found.out, todo);
    const made = wrangler(create);
    if (!made.ok) fail(`Could not create ${label}.`, made.out, todo);
    created.push(label);
    log(`  created  ${label}`);
    return { found: false, stdout: made.stdout };
  };
  const permission = (product) =>
    `check that your login (or API token) may edit ${product} on this account; if the name is taken by something else, change it in wrangler.toml`;

  log(`Resources for Worker '${plan.worker}':`);
  for (const d of plan.d1)
    ensure(`D1 database ${d.name}`, ["d1", "info", d.name, "--json"], ["d1", "create", d.name], permission("D1"));
  for (const v of plan.vectorize) {
    const index = ensure(
      `Vectorize index ${v.index}`,
      ["vectorize", "get", v.index, "--json"],
      ["vectorize", "create", v.index, `--dimensions=${v.dimensions}`, `--metric=${v.metric}`],
      permission("Vectorize"),
    );
    if (index.found) {
      const config = JSON.parse(index.stdout).config ?? {};
      if (config.dimensions !== v.dimensions || (config.metric && config.metric !== v.metric)) {
        fail(
          `Vectorize index ${v.index} exists with ${config.dimensions} dimensions (${config.metric}); this deployment embeds with ${v.dimensions} (${v.metric}).`,
          "",
          `set [vars] EMBEDDING_DIMENSIONS to ${config.dimensions} (and an EMBEDDING_MODEL that gives it), or name another index in wrangler.toml`,
        );
      }
    }
    const listed = wrangler(["vectorize", "list-metadata-index", v.index, "--json"]);
    if (!listed.ok) fail(`Could not list the metadata indexes of ${v.index}.`, listed.out, permission("Vectorize"));
    const have = new Set(JSON.parse(listed.stdout || "[]").map((m) => m.propertyName));
    for (const m of v.metadataIndexes) {
      const label = `metadata index ${m.propertyName} on ${v.index}`;
      if (have.has(m.propertyName)) {
        existing.push(label);
        log(`  exists   ${label}`);
        continue;
      }
      const made = wrangler([
        "vectorize",
        "create-metadata-index",
        v.index,
        `--property-name=${m.propertyName}`,
        `--type=${m.type}`,
      ]);
      if (!made.ok) fail(`Could not create the ${label}.`, made.out, permission("Vectorize"));
      created.push(label);
      log(
        `  created  ${label}${index.found ? " (vectors stored before it are not filterable by it: `POST /admin/reconcile` re-upserts them)" : ""}`,
      );
    }
  }
  for (const q of plan.queues)
    ensure(`queue ${q}`, ["queues", "info", q], ["queues", "create", q], permission("Queues"));
  for (const b of plan.r2)
    ensure(
      `R2 bucket ${b.name}`,
      ["r2", "bucket", "info", b.name],
      ["r2", "bucket", "create", b.name],
      permission("R2"),
    );
  const config = readFileSync("wrangler.toml", "utf8");
  const kvList = plan.kv.length === 0 ? { ok: true, stdout: "[]" } : wrangler(["kv", "namespace", "list"]);
  if (!kvList.ok) fail("Could not list KV namespaces.", kvList.out, permission("Workers KV"));
  const namespaces = JSON.parse(kvList.stdout);
  for (const k of plan.kv) {
    if (k.id) {
      // An id in wrangler.toml (written by an earlier run, or by hand) must be one of this account's namespaces.
      if (!namespaces.some((n) => n.id === k.id))
        fail(
          `wrangler.toml binds ${k.binding} to KV namespace ${k.id}, which this account does not have.`,
          "",
          `remove that id line from wrangler.toml (a namespace is then found or created by its title, ${k.title})`,
        );
      existing.push(`KV namespace ${k.title}`);
      log(`  exists   KV namespace ${k.id} (${k.binding})`);
      continue;
    }
    let namespace = namespaces.find((n) => n.title === k.title);
    if (namespace) {
      existing.push(`KV namespace ${k.title}`);
      log(`  exists   KV namespace ${k.title}`);
    } else {
      const made = wrangler(["kv", "namespace", "create", k.title]);
      if (!made.ok) fail(`Could not create KV namespace ${k.title}.`, made.out, permission("Workers KV"));
      const id = /\b([0-9a-f]{32})\b/.exec(made.out)?.[1];
      if (!id)
        fail(
          `KV namespace ${k.title} was created but its id was not in wrangler's answer.`,
          made.out,
          "run `npm run deploy` again: it finds the namespace by its title",
        );
      namespace = { id, title: k.title };
      created.push(`KV namespace ${k.title}`);
      log(`  created  KV namespace ${k.title}`);
    }
    k.id = namespace.id;
  }
  const withIds = withKvIds(config, plan.kv);
  if (withIds !== config) {
    writeFileSync("wrangler.toml", withIds);
    log(
      `  wrote the KV namespace ids into wrangler.toml (${plan.kv.map((k) => k.binding).join(", ")}), as wrangler does for what it provisions`,
    );
  }
  log(
    created.length === 0
      ? `Nothing to create: all ${existing.length} resources exist.`
      : `Created ${created.length}, found ${existing.length}.`,
  );

  log("Migrations (control database first, then every shard):");
  try {
    const bindings = await migrateAll({ remote: true, quiet: true });
    log(`  applied to ${bindings.join(", ")} (migrations already applied are skipped)`);
  } catch (error) {
    fail(
      "D1 migrations failed.",
      error.message,
      "read wrangler's message above; a migration that failed midway is retried from where it stopped",
    );
  }

  // No Worker yet means no secrets; any other failure stops the run, so a token that exists is never replaced.
  const secrets = wrangler(["secret", "list", "--format", "json"]);
  if (!secrets.ok && !NOT_FOUND.test(secrets.out))
    fail("Could not list the Worker's secrets.", secrets.out, permission("Workers scripts"));
  const set = new Set(secrets.ok ? JSON.parse(secrets.stdout || "[]").map((s) => s.name) : []);
  const missing = plan.secrets.filter((s) => !set.has(s));
  const generated = Object.fromEntries(missing.map((name) => [name, randomBytes(32).toString("hex")]));
  const dir = mkdtempSync(join(tmpdir(), "deploy-secrets-"));
  const secretsFile = join(dir, "secrets.json");
  let deployed;
  try {
    writeFileSync(secretsFile, JSON.stringify(generated), { mode: 0o600 });
    log(
      `Deploying ${plan.worker}${missing.length > 0 ? ` with new secret(s) ${missing.join(", ")}` : " (its secrets are kept)"}:`,
    );
    deployed = wrangler(["deploy", ...(missing.length > 0 ? ["--secrets-file", secretsFile] : [])]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (!deployed.ok)
    fail(
      "wrangler deploy failed.",
      deployed.out,
      "read wrangler's message; resources and migrations are in place, so `npm run deploy` again only retries the deploy",
    );
  // wrangler prints the Worker's URLs (workers.dev, routes) under "Deployed <name> triggers".
  const triggers = deployed.out.search(/Deployed .* triggers/);
  const url =
    triggers < 0 ? undefined : /https?:\/\/[^\s"']+/.exec(deployed.out.slice(triggers))?.[0]?.replace(/\/+$/, "");
  if (!url)
    fail(
      "wrangler deploy did not print the Worker's URL.",
      deployed.out,
      "enable the workers.dev route (wrangler.toml `workers_dev = true`) or run `npm run smoke -- --url <your route>`",
    );
  log(`  deployed ${url}`);
  const adminToken = generated.ADMIN_TOKEN ?? process.env.CONTEXT_EDGE_ADMIN_TOKEN;
  if (generated.ADMIN_TOKEN) {
    log(
      `\nADMIN_TOKEN (generated now, shown this once; keep it, it creates tenants and keys):\n  ${generated.ADMIN_TOKEN}\n`,
    );
  }

  let smoked = null;
  if (skipSmoke) log("Smoke test: skipped (--skip-smoke).");
  else if (!adminToken)
    log(
      "Smoke test: not run, the Worker's ADMIN_TOKEN was set before and is not known here: run it with CONTEXT_EDGE_ADMIN_TOKEN=<token> npm run deploy, or `npm run smoke -- --url <url> --key <key>`.",
    );
  else smoked = await smokeWithTemporaryKey(url, adminToken, log);

  log(`\nMCP URL: ${url}/mcp`);
  log(
    `First tenant and key:\n  curl -s -X POST ${url}/admin/tenants -H "Authorization: Bearer <ADMIN_TOKEN>" -d '{"name":"my-team"}'`,
  );
  log(
    `  curl -s -X POST ${url}/admin/tenants/<tenant_id>/keys -H "Authorization: Bearer <ADMIN_TOKEN>" -d '{"name":"agent","scopes":["read","write"]}'`,
  );
  if (smoked && !smoked.ok) throw new DeployError("The deployment answers, but the smoke test failed (steps above).");
  return { ok: true, url, created, existing, generatedSecrets: Object.keys(generated) };
}

/** The KV ids of the plan written after each `binding = "<name>"` of a [[kv_namespaces]] block that has none. */
export function withKvIds(toml, kv) {
  let out = toml;
  for (const k of kv) {
    if (!k.id) continue;
    const block = `(\\[\\[kv_namespaces\\]\\][ \\t]*\\nbinding[ \\t]*=[ \\t]*"${k.binding}"[ \\t]*\\n)(?![ \\t\\n]*id[ \\t]*=)`;
    out = out.replace(new RegExp(block), `$1id = "${k.id}"\n`);
  }
  return out;
}

/**
 * The smoke test with a key made for it: the tenant `deploy-smoke` (made once) and a key with every scope,
 * revoked afterwards, so no standing credential is left behind.
 */
async function smokeWithTemporaryKey(url, adminToken, log) {
  const admin = adminClient(url, adminToken);
  const { tenants } = await admin.json("GET", "/tenants");
  const tenant =
    tenants.find((t) => t.name === "deploy-smoke") ?? (await admin.json("POST", "/tenants", { name: "deploy-smoke" }));
  const key = await admin.json("POST", `/tenants/${tenant.tenant_id}/keys`, {
    name: `smoke ${new Date().toISOString()}`,
    scopes: ["read", "write", "admin"],
  });
  log("Smoke test:");
  try {
    return await smoke({ url, key: key.api_key, log: (line) => log(`  ${line}`) });
  } finally {
    await admin
      .json("DELETE", `/keys/${key.key_id}`)
      .catch((error) => log(`  (could not revoke the smoke key: ${error.message})`));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let args;
  try {
    args = parseArgs({ options: { "dry-run": { type: "boolean" }, "skip-smoke": { type: "boolean" } } }).values;
  } catch (error) {
    console.error(`${error.message}\nusage: npm run deploy [-- --dry-run | --skip-smoke]`);
    process.exit(2);
  }
  try {
    await deploy({ dryRun: args["dry-run"], skipSmoke: args["skip-smoke"] });
  } catch (error) {
    console.error(`\nDeploy stopped: ${error.message}`);
    process.exit(1);
  }
}
