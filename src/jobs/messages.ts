/** Messages on the JOBS queue. Each names its tenant; consumers open a scope for it. */
export type JobMessage =
  | { type: "embed"; tenantId: string; itemIds: string[] }
  /** Summarize when no summary covers `messageCount` messages yet (idempotent). */
  | { type: "summarize"; tenantId: string; conversationId: string; messageCount: number }
  /** Link items to their nearest neighbours (after embedding). */
  | { type: "link"; tenantId: string; itemIds: string[] }
  /** Re-index chunks written before tenant-private keyword terms (every tenant's; queues itself again while some are left). */
  | { type: "reindex"; tenantId: null };
