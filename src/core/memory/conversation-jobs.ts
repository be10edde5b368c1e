import { IN_JSON, type TenantScope } from "../../db/scope";
import type { JobMessage } from "../../messages";
import type { Services } from "../../ports";
import { needsSummary } from "../conversations/conversations";
import type { ConversationCounters } from "./item-rows";

/**
 * Whether each project extracts memories, by its own setting (project_settings); a project without one follows the
 * deployment (EXTRACT_BY_DEFAULT). Read in the write's batch of reads, so it costs no round trip of its own.
 */
export function extractSettingsStatement(
  scope: TenantScope,
  projects: readonly string[],
  conversationIds: readonly string[],
): D1PreparedStatement {
  return scope.d1
    .prepare(
      `SELECT project, extract FROM project_settings WHERE tenant_id = ?1 AND extract IS NOT NULL
         AND (project ${IN_JSON.replace("?", "?2")} OR project IN (
           SELECT project FROM conversations WHERE tenant_id = ?1 AND id ${IN_JSON.replace("?", "?3")}))`,
    )
    .bind(scope.tenantId, JSON.stringify(projects), JSON.stringify(conversationIds));
}

/**
 * How long after a job should have read a conversation the minute pass takes its job to be lost and sends another
 * (src/jobs/recent-jobs.ts): a queue delivers in seconds and a job reads a window in well under a minute.
 */
export const EXTRACTION_GRACE_MS = 2 * 60_000;

/**
 * When a job should have read what a write to an extracted conversation adds: the flush a minute after it, and the
 * grace the minute pass gives a job before it sends another (extraction-due.ts).
 */
export function extractionDueAt(services: Services, now: number): number {
  const idle = now + services.config.extraction.idleSeconds * 1000;
  // Per minute, no flush job is sent with the write: the minute pass sends it when this time comes.
  return services.config.jobDispatch === "per-minute" ? idle : idle + EXTRACTION_GRACE_MS;
}

/**
 * The jobs a write to conversations starts: a summary where seed 003's thresholds are crossed, and memory extraction
 * where the project extracts: at once when the conversation's turns not yet extracted fill another window, and one
 * minute after the first such turn (flush), so a conversation that stops short of a window is still read.
 */
export async function queueConversationJobs(
  scope: TenantScope,
  services: Services,
  counters: readonly ConversationCounters[],
  addedTokens: ReadonlyMap<string, number>,
  extractOf: (project: string) => boolean,
): Promise<void> {
  // Per minute, the minute pass's job for the new items checks the same thresholds (new-items.ts).
  if (services.config.jobDispatch === "per-minute") return;
  const now: JobMessage[] = [];
  const later: JobMessage[] = [];
  const extraction = services.config.extraction;
  for (const c of counters) {
    const summarize = needsSummary(
      {
        messageCount: c.message_count,
        tokens: c.tokens,
        summarizedCount: c.summarized_count,
        summarizedTokens: c.summarized_tokens,
      },
      services.config.conversations,
    );
    if (summarize)
      now.push({ type: "summarize", tenantId: scope.tenantId, conversationId: c.id, messageCount: c.message_count });
    if (services.model === null || !extractOf(c.project)) continue;
    const pending = c.tokens - c.extracted_tokens;
    const before = pending - (addedTokens.get(c.id) ?? 0);
    const job = (flush: boolean): JobMessage => ({
      type: "extract",
      tenantId: scope.tenantId,
      conversationId: c.id,
      flush,
    });
    if (before <= 0) later.push(job(true));
    if (Math.floor(before / extraction.windowTokens) < Math.floor(pending / extraction.windowTokens))
      now.push(job(false));
  }
  try {
    if (now.length > 0) await services.jobs.send(now);
    if (later.length > 0) await services.jobs.send(later, { delaySeconds: extraction.idleSeconds });
  } catch (error) {
    // The sweep re-sends a lost summary; the minute pass a lost extraction (conversations.extract_due_at).
    console.error("could not queue a conversation's summary or extraction", error);
  }
}
