import type { JobMessage } from "../messages";

/** Conversations (documents) and failed windows one pass sends jobs for, per shard; more wait for the next minute. */
const RECOVERY_LIMIT = 500;
/**
 * After sending a job, how long the pass leaves the conversation (or window) before sending another if nothing
 * changed: the job moves its due time itself when it runs, so this only bounds a lost job's re-sends.
 */
const RESEND_AFTER_MS = 10 * 60_000;

/**
 * Every minute, on one shard: an extract job for each conversation (or document) whose extract_due_at has passed (its job was
 * lost: the send failed after the write, the process died, or a job was dead-lettered), and a retry job for each
 * failed window whose retry_at has come. Both walk partial indexes of what is pending, so a pass with nothing to do
 * reads no rows (a moving tenant's wait for its move). What it sends is pushed RESEND_AFTER_MS on in the same statement, so a job still in the queue is
 * not sent again a minute later.
 */
export async function recoverExtraction(d1: D1Database, now: number): Promise<JobMessage[]> {
  const [due, dueDocuments, retries] = await d1.batch<{
    tenant_id: string;
    id: string;
    conversation_id?: string;
    document_id?: string | null;
  }>([
    overdue(d1, now, "conversations", "extract_due_at", "tenant_id, id"),
    overdue(d1, now, "documents", "extract_due_at", "tenant_id, id"),
    overdue(d1, now, "extraction_windows", "retry_at", "tenant_id, id, conversation_id, document_id"),
  ]);
  return [
    ...due!.results.map(
      (r): JobMessage => ({ type: "extract", tenantId: r.tenant_id, conversationId: r.id, flush: true }),
    ),
    ...dueDocuments!.results.map(
      (r): JobMessage => ({
        type: "extract",
        tenantId: r.tenant_id,
        conversationId: r.id,
        flush: true,
        document: true,
      }),
    ),
    ...retries!.results.map(
      (r): JobMessage => ({
        type: "extract",
        tenantId: r.tenant_id,
        conversationId: r.conversation_id!,
        flush: true,
        retryWindow: r.id,
        ...(r.document_id ? { document: true as const } : {}),
      }),
    ),
  ];
}

/** Rows of `table` whose `column` has passed, pushed RESEND_AFTER_MS on, `returning` their columns (oldest first). */
function overdue(d1: D1Database, now: number, table: string, column: string, returning: string): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE ${table} SET ${column} = ?2
       WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${column} <= ?1
         AND tenant_id NOT IN (SELECT tenant_id FROM tenant_fences) ORDER BY ${column} LIMIT ?3)
       RETURNING ${returning}`,
    )
    .bind(now, now + RESEND_AFTER_MS, RECOVERY_LIMIT);
}
