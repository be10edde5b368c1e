import type { BillableUnits } from "./billable-units";

// What travels on the queues: job messages and the usage log's tool-call records.

/** Messages on the JOBS queue. Each names its tenant; consumers open a scope for it. */
export type JobMessage =
  | { type: "embed"; tenantId: string; itemIds: string[] }
  /** Summarize when no summary covers `messageCount` messages yet (idempotent). */
  | { type: "summarize"; tenantId: string; conversationId: string; messageCount: number }
  /** Link items to their nearest neighbours (after embedding). */
  | { type: "link"; tenantId: string; itemIds: string[] }
  /**
   * Items written since the minute pass last looked (JOB_DISPATCH=per-minute): embed, link, and the summaries and
   * extractions their conversations are due (src/core/memory/new-items.ts).
   */
  | { type: "new-items"; tenantId: string; itemIds: string[] }
  /** Re-index chunks written before tenant-private keyword terms (every tenant's of one shard; queues itself again while some are left). */
  | { type: "reindex"; tenantId: null; shard: string }
  /** Delete a tenant (project null) or one of its projects, a few bounded steps a job; queues itself again until done. */
  | { type: "delete"; tenantId: string; project: string | null }
  /**
   * Convert a large document in the background (src/core/documents/queued-conversion.ts): its original is in R2 and
   * its row says converting this version (`sha256`); a job for a version no longer converting does nothing. `title`:
   * the caller's, which the document's own does not replace.
   */
  | { type: "convert"; tenantId: string; documentId: string; sha256: string; title: string | null }
  /** Move a tenant between shards, some pages a job; queues itself again (later while it waits) until done (src/control/moves.ts). */
  | { type: "move"; tenantId: string }
  /**
   * Extract memories from a conversation's turns not read yet: every full window, and with `flush` (or once the
   * conversation has gone quiet) the last, shorter one too (src/core/extraction/). Idempotent per window. With
   * `retryWindow`, instead try that failed window of the conversation again.
   */
  | {
      type: "extract";
      tenantId: string;
      /** The conversation's id, or the document's when `document`. */
      conversationId: string;
      flush: boolean;
      force?: boolean;
      retryWindow?: string;
      /** Read a document's chunks (memory_ingest_document with extract: true) instead of a conversation's turns. */
      document?: true;
    };

/** One tool call, as the usage log keeps it. Later tools read it (metrics, tool conversations, usage report). */
export interface ToolCallRecord {
  keyId: string;
  tool: string;
  project: string | null;
  conversationId: string | null;
  startedAt: number;
  durationMs: number;
  errorCode: string | null;
  /**
   * What the call spent (a batched group's share): D1 round trips and the time waited on them (the rest of
   * durationMs is the worker's own work and other I/O), and its billable units.
   */
  units: BillableUnits;
}

/** One job (or a merged group's share) as the usage log keeps it: its kind, when it ran, what it spent. */
export interface JobRunRecord {
  job: string;
  startedAt: number;
  failed: boolean;
  units: BillableUnits;
}

/** The tool calls of one request, or the jobs of one batch, on their way to the usage log (the USAGE queue). */
export interface UsageMessage {
  tenantId: string;
  calls: ToolCallRecord[];
  jobs?: JobRunRecord[];
}
