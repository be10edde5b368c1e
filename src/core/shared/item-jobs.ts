import type { JobMessage } from "../../ports";

/** Items per embed or link message: ~4 KB of ids, well under Queues' 128 KB a message. */
const ITEMS_PER_JOB = 100;

/** Embed or link messages for the items, ITEMS_PER_JOB to a message, in order. */
export function itemJobs(type: "embed" | "link", tenantId: string, itemIds: readonly string[]): JobMessage[] {
  const messages: JobMessage[] = [];
  for (let i = 0; i < itemIds.length; i += ITEMS_PER_JOB) messages.push({ type, tenantId, itemIds: itemIds.slice(i, i + ITEMS_PER_JOB) });
  return messages;
}
