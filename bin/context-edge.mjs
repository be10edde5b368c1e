#!/usr/bin/env node
// `npx context-edge <command>`: operating a deployment (local or remote) through its admin API with the admin
// token. Exit codes a script can use: 0 done, 1 the server refused or failed, 2 bad usage, argument or file,
// 3 the server cannot be reached, 4 the token was refused.
import { parseArgs } from "node:util";
import { adminClient, CliError, EXIT } from "../scripts/admin-client.mjs";
import { moveTenant } from "../scripts/cli-move.mjs";
import { exportTenant, importFile } from "../scripts/cli-transfer.mjs";

const HELP = `usage: context-edge <command> [arguments] [--url URL] [--token ADMIN_TOKEN] [--json]

  tenants create NAME [--id ID] [--shard SHARD] [--vector-index VECTORIZE_<name>]
                                                   a tenant (placed on the emptiest shard, and with Vectorize
                                                   the index with the fewest vectors, unless named)
  tenants list                                     every tenant, with its shard
  tenants show TENANT                              one tenant (and its move, while one runs)
  tenants delete TENANT                            deletes it and everything it stored (asks for --yes)
  tenants quotas TENANT [--max-items N] [--max-bytes N] [--max-pending-jobs N] [--calls-per-minute N]
                                                   its quotas and usage; each option sets one (a number,
                                                   "unlimited", or "default")
  keys create TENANT [--name N] [--scopes read,write,admin] [--projects a,b]
                                                   a new API key, printed once
  keys list TENANT                                 its keys (never the secrets)
  keys revoke KEY_ID                               revokes a key and its OAuth grants
  export TENANT [--project P] [--out FILE]         NDJSON to FILE (or stdout), with progress and a count
  import TENANT FILE [--project P] [--format context-edge|mcp-memory|mem0]
                                                   up to 50 MB, with progress and a count
  move TENANT SHARD                                moves a tenant to another shard and follows it to the end
  shards                                           the shards (and Vectorize indexes), with their size and tenants
  smoke --key KEY                                  the end-to-end check (npm run smoke)
  deploy [--dry-run] [--skip-smoke]                deploys this checkout (npm run deploy)

  --url    the deployment (default $CONTEXT_EDGE_URL, else http://localhost:8787)
  --token  the admin token (default $CONTEXT_EDGE_ADMIN_TOKEN, else $ADMIN_TOKEN)
  --json   print the answer as JSON

exit codes: 0 done, 1 refused or failed, 2 bad usage or file, 3 unreachable, 4 token refused`;

const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  id: { type: "string" },
  shard: { type: "string" },
  "vector-index": { type: "string" },
  name: { type: "string" },
  scopes: { type: "string" },
  projects: { type: "string" },
  project: { type: "string" },
  out: { type: "string" },
  format: { type: "string" },
  key: { type: "string" },
  yes: { type: "boolean" },
  "dry-run": { type: "boolean" },
  "skip-smoke": { type: "boolean" },
  "max-items": { type: "string" },
  "max-bytes": { type: "string" },
  "max-pending-jobs": { type: "string" },
  "calls-per-minute": { type: "string" },
};

/** The quota options, by the admin API's names (PATCH /admin/tenants/:id {"quotas": ...}). */
const QUOTA_OPTIONS = {
  "max-items": "max_items",
  "max-bytes": "max_bytes",
  "max-pending-jobs": "max_pending_jobs",
  "calls-per-minute": "calls_per_minute",
};

/** The quota options given, as the admin API takes them: a whole number, "unlimited", or null for "default". */
function quotaPatch(o) {
  const patch = {};
  for (const [option, name] of Object.entries(QUOTA_OPTIONS)) {
    const value = o[option];
    if (value === undefined) continue;
    if (/^\d+$/.test(value)) patch[name] = Number(value);
    else if (value === "unlimited") patch[name] = "unlimited";
    else if (value === "default") patch[name] = null;
    else throw new CliError(`--${option} takes a whole number, "unlimited" or "default", not '${value}'`, EXIT.usage);
  }
  return patch;
}

async function main(argv, { log = console.log } = {}) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  } catch (error) {
    throw new CliError(`${error.message}\n\n${HELP}`, EXIT.usage);
  }
  const { values: o, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (o.help || !command) {
    log(HELP);
    if (!command && !o.help) throw new CliError("no command given", EXIT.usage);
    return;
  }
  const url = o.url ?? process.env.CONTEXT_EDGE_URL ?? "http://localhost:8787";
  const client = () => adminClient(url, o.token ?? process.env.CONTEXT_EDGE_ADMIN_TOKEN ?? process.env.ADMIN_TOKEN);
  const need = (count, usage) => {
    if (rest.length !== count) throw new CliError(`usage: context-edge ${command} ${usage}`, EXIT.usage);
    return rest;
  };
  const show = (value, human) => log(o.json ? JSON.stringify(value, null, 2) : human(value));
  const list = (value) =>
    value
      ? value
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined;

  switch (command) {
    case "tenants": {
      const [verb, ...args] = rest;
      const tenantArg = (usage) => {
        if (args.length !== 1) throw new CliError(`usage: context-edge tenants ${verb} ${usage}`, EXIT.usage);
        return encodeURIComponent(args[0]);
      };
      if (verb === "create") {
        if (args.length !== 1)
          throw new CliError(
            "usage: context-edge tenants create NAME [--id ID] [--shard SHARD] [--vector-index INDEX]",
            EXIT.usage,
          );
        const placed = {
          ...(o.shard ? { shard: o.shard } : {}),
          ...(o["vector-index"] ? { vector_index: o["vector-index"] } : {}),
        };
        const body = { name: args[0], ...(o.id ? { tenant_id: o.id } : {}), ...placed };
        return show(
          await client().json("POST", "/tenants", body),
          (t) =>
            `created tenant ${t.tenant_id} (${t.name}) on ${t.shard}${t.vector_index ? `, vectors in ${t.vector_index}` : ""}`,
        );
      }
      if (verb === "list") {
        const { tenants } = await client().json("GET", "/tenants");
        return show(tenants, (ts) =>
          ts.length === 0
            ? "no tenants"
            : ts
                .map((t) => `${t.tenant_id}\t${t.shard}\t${t.name}${t.deleting_since ? "\t(being deleted)" : ""}`)
                .join("\n"),
        );
      }
      if (verb === "show") {
        const t = await client().json("GET", `/tenants/${tenantArg("TENANT")}`);
        return show(t, () =>
          Object.entries(t)
            .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`)
            .join("\n"),
        );
      }
      if (verb === "delete") {
        const tenant = tenantArg("TENANT --yes");
        if (!o.yes)
          throw new CliError(`this deletes tenant ${args[0]} and everything it stored; add --yes to go on`, EXIT.usage);
        const response = await client().send("DELETE", `/tenants/${tenant}`);
        const body = await response.json();
        return show(body, () =>
          response.status === 202
            ? `deleting ${args[0]} (continues in the background; \`tenants show\` says when it is gone)`
            : `deleted ${args[0]}`,
        );
      }
      if (verb === "quotas") {
        const tenant = tenantArg(
          "TENANT [--max-items N] [--max-bytes N] [--max-pending-jobs N] [--calls-per-minute N]",
        );
        const patch = quotaPatch(o);
        if (Object.keys(patch).length > 0) await client().json("PATCH", `/tenants/${tenant}`, { quotas: patch });
        const { quotas } = await client().json("GET", `/tenants/${tenant}/stats`);
        const shown = (n) => (n === null ? "unlimited" : n.toLocaleString("en-US"));
        return show(quotas, (q) =>
          Object.entries(q)
            .map(([name, { limit, usage }]) => `${name.padEnd(17)}${shown(limit).padStart(14)}  (uses ${shown(usage)})`)
            .join("\n"),
        );
      }
      throw new CliError("usage: context-edge tenants create|list|show|delete|quotas ...", EXIT.usage);
    }
    case "keys": {
      const [verb, ...args] = rest;
      if (verb === "create") {
        if (args.length !== 1)
          throw new CliError(
            "usage: context-edge keys create TENANT [--name N] [--scopes read,write,admin] [--projects a,b]",
            EXIT.usage,
          );
        const body = {
          name: o.name ?? "cli",
          ...(o.scopes ? { scopes: list(o.scopes) } : {}),
          ...(o.projects ? { projects: list(o.projects) } : {}),
        };
        const key = await client().json("POST", `/tenants/${encodeURIComponent(args[0])}/keys`, body);
        return show(
          key,
          (k) =>
            `${k.api_key}\n(key ${k.key_id}; scopes ${k.scopes.join(",")}; projects ${k.projects?.join(",") ?? "all"}; shown only once)`,
        );
      }
      if (verb === "list") {
        if (args.length !== 1) throw new CliError("usage: context-edge keys list TENANT", EXIT.usage);
        const { keys } = await client().json("GET", `/tenants/${encodeURIComponent(args[0])}/keys`);
        return show(keys, (ks) =>
          ks.length === 0
            ? "no keys"
            : ks
                .map(
                  (k) =>
                    `${k.key_id}\t${k.key_prefix}…\t${k.scopes.join(",")}\t${k.projects?.join(",") ?? "all"}\t${k.name}${k.revoked_at ? "\trevoked" : ""}`,
                )
                .join("\n"),
        );
      }
      if (verb === "revoke") {
        if (args.length !== 1) throw new CliError("usage: context-edge keys revoke KEY_ID", EXIT.usage);
        const revoked = await client().json("DELETE", `/keys/${encodeURIComponent(args[0])}`);
        return show(revoked, (k) => `revoked ${k.key_id} (${k.oauth_grants_revoked} OAuth grants with it)`);
      }
      throw new CliError("usage: context-edge keys create|list|revoke ...", EXIT.usage);
    }
    case "export": {
      const [tenant] = need(1, "TENANT [--project P] [--out FILE]");
      const counts = await exportTenant(client(), tenant, { project: o.project, out: o.out });
      if (o.json && o.out) log(JSON.stringify(counts));
      return;
    }
    case "import": {
      const [tenant, file] = need(2, "TENANT FILE [--project P] [--format F]");
      const result = await importFile(client(), tenant, file, { project: o.project, format: o.format });
      if (o.json) log(JSON.stringify(result, null, 2));
      return;
    }
    case "move": {
      const [tenant, shard] = need(2, "TENANT SHARD");
      await moveTenant(client(), tenant, shard, { log });
      return;
    }
    case "shards": {
      need(0, "");
      const { shards, vector_indexes: indexes } = await client().json("GET", "/shards");
      const rows = (list) => list.map((s) => Object.values(s).join("\t"));
      // --json keeps its shape (the shards); the indexes follow in the human form only, where a deployment has Vectorize.
      return show(shards, (ss) => [...rows(ss), ...(indexes ? rows(indexes) : [])].join("\n"));
    }
    case "smoke": {
      need(0, "--key KEY [--url URL]");
      if (!o.key) throw new CliError("usage: context-edge smoke --key KEY [--url URL]", EXIT.usage);
      const { smoke } = await import("../scripts/smoke.mjs");
      const { ok } = await smoke({ url, key: o.key, log });
      if (!ok) throw new CliError("the smoke test failed", EXIT.failed);
      return;
    }
    case "deploy": {
      need(0, "[--dry-run] [--skip-smoke]");
      const { deploy } = await import("../scripts/deploy.mjs");
      await deploy({ dryRun: o["dry-run"], skipSmoke: o["skip-smoke"], log });
      return;
    }
    default:
      throw new CliError(`unknown command '${command}'\n\n${HELP}`, EXIT.usage);
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  console.error(error.message);
  process.exit(error instanceof CliError ? error.code : EXIT.failed);
}
