import type { JobMessage } from "../messages";

/** Items per embed or link message: ~4 KB of ids, well under Queues' 128 KB a message. */
const ITEMS_PER_JOB = 100;

/** Embed or link messages for the items, ITEMS_PER_JOB to a message, in order. */
export function itemJobs(type: "embed" | "link", tenantId: string, itemIds: readonly string[]): JobMessage[] {
  const messages: JobMessage[] = [];
  for (let i = 0; i < itemIds.length; i += ITEMS_PER_JOB)
    messages.push({ type, tenantId, itemIds: itemIds.slice(i, i + ITEMS_PER_JOB) });
  return messages;
}

/** Embed or link messages for pending items of any tenants (rows as a sweep reads them), grouped per tenant. */
export function itemJobsByTenant(type: "embed" | "link", rows: readonly Record<string, unknown>[]): JobMessage[] {
  const byTenant = new Map<string, string[]>();
  for (const row of rows) {
    const ids = byTenant.get(row.tenant_id as string);
    if (ids) ids.push(row.id as string);
    else byTenant.set(row.tenant_id as string, [row.id as string]);
  }
  return [...byTenant].flatMap(([tenantId, ids]) => itemJobs(type, tenantId, ids));
}
