#!/usr/bin/env node
// `npm run move-tenant -- --tenant ID --shard SHARD_1 [--url http://localhost:8787] [--token ADMIN_TOKEN]`:
// starts a tenant's move between shards (POST /admin/tenants/:id/move) and follows it (GET /admin/tenants/:id)
// until it is done, printing its state and progress. The token defaults to $ADMIN_TOKEN, the URL to
// $CONTEXT_EDGE_URL or the local dev server. Exit codes: 0 done, 1 the move failed or was refused, 2 bad usage.
import { parseArgs } from "node:util";

const usage = "usage: npm run move-tenant -- --tenant ID --shard NAME [--url URL] [--token ADMIN_TOKEN] [--follow-only]";
let options;
try {
  ({ values: options } = parseArgs({
    options: { tenant: { type: "string" }, shard: { type: "string" }, url: { type: "string" }, token: { type: "string" }, "follow-only": { type: "boolean" } },
  }));
} catch (error) {
  console.error(`${error.message}\n${usage}`);
  process.exit(2);
}
const url = (options.url ?? process.env.CONTEXT_EDGE_URL ?? "http://localhost:8787").replace(/\/$/, "");
const token = options.token ?? process.env.ADMIN_TOKEN;
if (!options.tenant || (!options.shard && !options["follow-only"]) || !token) {
  console.error(`${!token ? "no admin token: pass --token or set ADMIN_TOKEN\n" : ""}${usage}`);
  process.exit(2);
}

const admin = async (method, path, body) => {
  let response;
  try {
    response = await fetch(`${url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    console.error(`cannot reach ${url}: ${error.cause?.message ?? error.message}`);
    process.exit(1);
  }
  const json = await response.json().catch(() => ({}));
  return { status: response.status, json };
};

const tenantPath = `/tenants/${encodeURIComponent(options.tenant)}`;
if (!options["follow-only"]) {
  const started = await admin("POST", `${tenantPath}/move`, { shard: options.shard });
  if (started.status !== 202) {
    console.error(`move refused (${started.status}): ${started.json.error?.message ?? JSON.stringify(started.json)}`);
    process.exit(1);
  }
  console.log(`moving ${options.tenant} from ${started.json.move.source} to ${started.json.move.target} (${started.json.move.total} rows)`);
}
let last = "";
for (;;) {
  const { status, json } = await admin("GET", tenantPath);
  if (status !== 200) {
    console.error(`cannot read the tenant (${status}): ${json.error?.message ?? JSON.stringify(json)}`);
    process.exit(1);
  }
  const move = json.move;
  if (!move) {
    console.error("the tenant has no move");
    process.exit(1);
  }
  const line = `${move.state}: ${move.copied}/${move.total} rows copied`;
  if (line !== last) console.log(line);
  last = line;
  if (move.state === "done") {
    console.log(`done: ${options.tenant} is on ${json.shard}; every table verified (rows and checksum on both shards)`);
    process.exit(0);
  }
  if (move.state === "failed") {
    console.error(`failed: ${move.error}`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 1000));
}
