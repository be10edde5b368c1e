#!/usr/bin/env node
// `npm run move-tenant -- --tenant ID --shard SHARD_1 [--url http://localhost:8787] [--token ADMIN_TOKEN]`:
// starts a tenant's move between shards (POST /admin/tenants/:id/move) and follows it (GET /admin/tenants/:id)
// until it is done, printing its state and progress. The same as `npx context-edge move ID SHARD`. The token
// defaults to $ADMIN_TOKEN, the URL to $CONTEXT_EDGE_URL or the local dev server. Exit codes as the CLI's
// (scripts/admin-client.mjs): 0 done, 1 the move failed or was refused, 2 bad usage, 3 unreachable, 4 bad token.
import { parseArgs } from "node:util";
import { adminClient, CliError, EXIT } from "./admin-client.mjs";
import { moveTenant } from "./cli-move.mjs";

const usage =
  "usage: npm run move-tenant -- --tenant ID --shard NAME [--url URL] [--token ADMIN_TOKEN] [--follow-only]";
try {
  let options;
  try {
    ({ values: options } = parseArgs({
      options: {
        tenant: { type: "string" },
        shard: { type: "string" },
        url: { type: "string" },
        token: { type: "string" },
        "follow-only": { type: "boolean" },
      },
    }));
  } catch (error) {
    throw new CliError(`${error.message}\n${usage}`, EXIT.usage);
  }
  if (!options.tenant || (!options.shard && !options["follow-only"])) throw new CliError(usage, EXIT.usage);
  const client = adminClient(
    options.url ?? process.env.CONTEXT_EDGE_URL ?? "http://localhost:8787",
    options.token ?? process.env.ADMIN_TOKEN,
  );
  await moveTenant(client, options.tenant, options.shard, { followOnly: options["follow-only"] });
} catch (error) {
  console.error(error.message);
  process.exit(error instanceof CliError ? error.code : EXIT.failed);
}
