import type { Env } from "../env";
import { QueueProducer } from "../adapters/queue-producer";
import type { JobMessage } from "./messages";

/** Items still unembedded this long after writing are taken to have lost their job. */
export const LOST_JOB_AFTER_MS = 10 * 60_000;
const SWEEP_LIMIT = 5000;

/** Cron: re-enqueues embedding for items whose job was lost (queue outage, dead letter after a fix). */
export async function sweepLostJobs(env: Env, now = Date.now()): Promise<number> {
  const { results } = await env.DB.prepare(
    "SELECT tenant_id, id FROM items WHERE embedded_at IS NULL AND created_at < ? ORDER BY tenant_id LIMIT ?",
  )
    .bind(now - LOST_JOB_AFTER_MS, SWEEP_LIMIT)
    .all<{ tenant_id: string; id: string }>();
  const byTenant = new Map<string, string[]>();
  for (const row of results) byTenant.set(row.tenant_id, [...(byTenant.get(row.tenant_id) ?? []), row.id]);
  const messages: JobMessage[] = [];
  for (const [tenantId, ids] of byTenant) {
    for (let i = 0; i < ids.length; i += 100) messages.push({ type: "embed", tenantId, itemIds: ids.slice(i, i + 100) });
  }
  await new QueueProducer(env.JOBS).send(messages);
  return results.length;
}
