import { type UnitsReport, unitTotals } from "../core/tenants/units-report";
import { HOURLY_UNITS } from "../core/tenants/usage-hours";
import { type ShardBindings, shardDatabase, shardNames } from "./shards";
import { DEPLOYMENT } from "./usage-buffer";

const HOUR = 3_600_000;

/** The deployment's billable units over a period, all tenants and work of no tenant's together. */
export interface DeploymentUsage {
  tenants: number;
  shards: number;
  totals: UnitsReport["totals"];
}

/**
 * What the whole deployment spent since `since`, summed from every shard's usage_hours: every tenant's tool calls
 * and jobs, and the work that is no tenant's (scheduled passes, the control database, requests with no tenant), with
 * its mean day against the Free plan's allowances, which are the Cloudflare account's and so bound by this total,
 * not by one tenant's. One control read (the tenants and their shards) and one statement a shard, each seeking the
 * period's rows of its tenants by the table's key (tenant, hour): the rows read grow with the period's rows, never
 * with the log's whole history.
 */
export async function deploymentUsage(
  env: ShardBindings & { CONTROL: D1Database },
  since: number,
  days: number,
): Promise<DeploymentUsage> {
  const { results: tenants } = await env.CONTROL.prepare("SELECT id, shard FROM tenants").all<{
    id: string;
    shard: string;
  }>();
  const shards = shardNames(env);
  const sums = HOURLY_UNITS.map(([, column]) => `COALESCE(SUM(${column}), 0) AS ${column}`).join(", ");
  const rows = await Promise.all(
    shards.map(async (shard) => {
      const ids = [DEPLOYMENT, ...tenants.filter((t) => t.shard === shard).map((t) => t.id)];
      return shardDatabase(env, shard)
        .prepare(`SELECT ${sums} FROM usage_hours WHERE tenant_id IN (SELECT value FROM json_each(?1)) AND hour >= ?2`)
        .bind(JSON.stringify(ids), since - (since % HOUR))
        .first<Record<string, number>>();
    }),
  );
  return {
    tenants: tenants.length,
    shards: shards.length,
    totals: unitTotals(
      rows.filter((row) => row !== null),
      days,
    ),
  };
}
