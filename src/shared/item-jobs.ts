import type { JobMessage } from "../messages";

/**
 * Items per embed or link message: ~4 KB of ids, well under Queues' 128 KB a message. The minute pass's new-items
 * message holds more (~20 KB, one 64 KB billing unit): it is the only message most writes cost.
 */
const ITEMS_PER_JOB = { embed: 100, link: 100, "new-items": 500 } as const;

export type ItemJobType = keyof typeof ITEMS_PER_JOB;

/** Messages of a type for the items, as many to a message as the type holds, in order. */
export function itemJobs(type: ItemJobType, tenantId: string, itemIds: readonly string[]): JobMessage[] {
  const messages: JobMessage[] = [];
  const size = ITEMS_PER_JOB[type];
  for (let i = 0; i < itemIds.length; i += size) messages.push({ type, tenantId, itemIds: itemIds.slice(i, i + size) });
  return messages;
}

/** Messages for pending items of any tenants (rows as a sweep reads them), grouped per tenant. */
export function itemJobsByTenant(type: ItemJobType, rows: readonly Record<string, unknown>[]): JobMessage[] {
  const byTenant = new Map<string, string[]>();
  for (const row of rows) {
    const ids = byTenant.get(row.tenant_id as string);
    if (ids) ids.push(row.id as string);
    else byTenant.set(row.tenant_id as string, [row.id as string]);
  }
  return [...byTenant].flatMap(([tenantId, ids]) => itemJobs(type, tenantId, ids));
}
