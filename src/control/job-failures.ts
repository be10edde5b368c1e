import type { Env } from "../env";
import type { JobMessage, UsageMessage } from "../messages";

/**
 * One row per failed message (the DLQ delivery keeps the last error the main consumer saw). The dead-letter
 * queue takes both queues' messages: a usage message (no `type`) is recorded as job type "usage".
 */
export async function recordFailure(
  env: Env,
  message: Message<JobMessage | UsageMessage>,
  error: string | null,
): Promise<void> {
  const type = "type" in message.body ? message.body.type : "calls" in message.body ? "usage" : undefined;
  await env.CONTROL.prepare(
    `INSERT INTO job_failures (tenant_id, message_id, job_type, body, attempts, last_error, failed_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (message_id) DO UPDATE SET attempts = MAX(attempts, excluded.attempts), last_error = COALESCE(excluded.last_error, last_error)`,
  )
    .bind(
      message.body.tenantId ?? null,
      message.id,
      type ?? "unknown",
      JSON.stringify(message.body).slice(0, 10_000),
      message.attempts,
      error,
      Date.now(),
    )
    .run();
}

export interface JobFailure {
  tenant_id: string | null;
  message_id: string;
  job_type: string;
  body: unknown;
  attempts: number;
  last_error: string | null;
  failed_at: string;
}

/** Dead-lettered jobs, newest first: what an operator reads at GET /admin/job-failures. */
export async function listJobFailures(db: D1Database, limit: number): Promise<JobFailure[]> {
  const { results } = await db
    .prepare(
      "SELECT tenant_id, message_id, job_type, body, attempts, last_error, failed_at FROM job_failures ORDER BY failed_at DESC LIMIT ?",
    )
    .bind(limit)
    .all<{
      tenant_id: string | null;
      message_id: string;
      job_type: string;
      body: string;
      attempts: number;
      last_error: string | null;
      failed_at: number;
    }>();
  return results.map((r) => ({ ...r, body: parseBody(r.body), failed_at: new Date(r.failed_at).toISOString() }));
}

/** Bodies are stored cut at 10,000 characters; a cut one comes back as text. */
function parseBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}
