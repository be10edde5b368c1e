// A tenant's move between shards, started and followed to its end (operator CLI and `npm run move-tenant`).
import { CliError, EXIT } from "./admin-client.mjs";

/** Starts the move (unless `followOnly`) and prints its state until it is done; a failed move is an error. */
export async function moveTenant(client, tenant, shard, { followOnly = false, log = console.log, pollMs = 1000 } = {}) {
  const path = `/tenants/${encodeURIComponent(tenant)}`;
  if (!followOnly) {
    const started = await client.json("POST", `${path}/move`, { shard });
    log(`moving ${tenant} from ${started.move.source} to ${started.move.target} (${started.move.total} rows)`);
  }
  let last = "";
  for (;;) {
    const tenantNow = await client.json("GET", path);
    const move = tenantNow.move;
    if (!move) throw new CliError(`tenant ${tenant} has no move`, EXIT.failed);
    const line = `${move.state}: ${move.copied}/${move.total} rows copied`;
    if (line !== last) log(line);
    last = line;
    if (move.state === "done") {
      log(`done: ${tenant} is on ${tenantNow.shard}; every table verified (rows and checksum on both shards)`);
      return tenantNow;
    }
    if (move.state === "failed") throw new CliError(`the move failed: ${move.error}`, EXIT.failed);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
