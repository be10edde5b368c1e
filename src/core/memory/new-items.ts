import { autoLinking } from "../../config";
import { remainingQueries } from "../../db/invocation-queries";
import { IN_JSON, type TenantScope } from "../../db/scope";
import type { JobMessage } from "../../messages";
import type { Services } from "../../ports";
import { itemJobs } from "../../shared/item-jobs";
import { autoSummarize, QUERIES_PER_SUMMARY } from "../conversations/auto-summarize";
import { needsSummary } from "../conversations/conversations";
import { autoLinkItems, LINK_PROJECT_QUERIES, LINK_RUN_QUERIES } from "../graph/auto-link";
import { embedItemsKeepingFirsts, type FirstVectors, markEmbedded } from "./embedding";

/** What the job did not reach for lack of D1 queries: the caller queues these items again as a job of their own. */
export interface NewItemsRun {
  left: string[];
}

type ConversationState = {
  id: string;
  message_count: number;
  tokens: number;
  summarized_count: number;
  summarized_tokens: number;
  extracted_tokens: number;
  extract_due_at: number | null;
};

/**
 * The job the minute pass sends for a tenant's items written since its last pass (JOB_DISPATCH=per-minute): embeds
 * them, links them (to each other from the vectors just made, to older items through the index), then summarizes
 * the conversations they reached seed 003's thresholds in, and queues an extraction for each conversation whose
 * turns not yet extracted fill a window. The quiet conversations' shorter last windows are the minute pass's
 * (conversations.extract_due_at). Idempotent: a redelivery embeds and links the same items again to the same result.
 */
export async function runNewItems(scope: TenantScope, services: Services, itemIds: string[]): Promise<NewItemsRun> {
  const firsts: FirstVectors = new Map();
  const embedding = await embedItemsKeepingFirsts(scope, services, itemIds, firsts, LINK_QUERIES + THRESHOLD_QUERIES);
  const left = new Set(embedding.left);
  const embedded = itemIds.filter((id) => !left.has(id));
  if (embedded.length === 0) return { left: embedding.left };
  const autoLink = autoLinking(services.config.conversations);
  // Linking marks the items embedded with their links, each row written once (auto-link.ts). Under the invocation's D1
  // queries (the Free plan's 50), projects the budget does not cover, or all of them when the first group of
  // embeddings took it, are marked embedded here and linked by link jobs of their own.
  if (autoLink && remainingQueries() >= LINK_QUERIES) {
    const linking = await autoLinkItems(scope, services, embedded, firsts);
    if (linking.left.length > 0) await services.jobs.send(itemJobs("link", scope.tenantId, linking.left));
  } else {
    await markEmbedded(scope, services, embedded, false).run();
    if (autoLink) await services.jobs.send(itemJobs("link", scope.tenantId, embedded));
  }
  // Past the budget, the 15-minute sweep writes a summary that is due, and the minute pass a quiet conversation's
  // extraction.
  if (remainingQueries() >= THRESHOLD_QUERIES) await conversationThresholds(scope, services, embedded);
  return { left: embedding.left };
}

/** D1 queries linking one project's items takes (auto-link.ts). */
const LINK_QUERIES = LINK_RUN_QUERIES + LINK_PROJECT_QUERIES;
/** D1 queries the conversations' check takes with one summary (their read, then a summary's). */
const THRESHOLD_QUERIES = 1 + QUERIES_PER_SUMMARY;

/** Summaries written and extractions queued for the conversations these items were written to. */
async function conversationThresholds(scope: TenantScope, services: Services, itemIds: string[]): Promise<void> {
  const { results } = await scope.d1
    .prepare(
      `SELECT id, message_count, tokens, summarized_count, summarized_tokens, extracted_tokens, extract_due_at
       FROM conversations WHERE tenant_id = ?1 AND id IN (
         SELECT conversation_id FROM items WHERE +tenant_id = ?1 AND id ${IN_JSON.replace("?", "?2")} AND conversation_id IS NOT NULL)`,
    )
    .bind(scope.tenantId, JSON.stringify(itemIds))
    .all<ConversationState>();
  const summaries = results
    .filter((c) =>
      needsSummary(
        {
          messageCount: c.message_count,
          tokens: c.tokens,
          summarizedCount: c.summarized_count,
          summarizedTokens: c.summarized_tokens,
        },
        services.config.conversations,
      ),
    )
    .map((c) => ({ conversationId: c.id, messageCount: c.message_count }));
  const jobs: JobMessage[] = [];
  if (summaries.length > 0) {
    const run = await autoSummarize(scope, services, summaries);
    jobs.push(...run.left.map((r) => ({ type: "summarize" as const, tenantId: scope.tenantId, ...r })));
  }
  // A write sets extract_due_at only where the conversation's project extracts (items.ts).
  const windowTokens = services.config.extraction.windowTokens;
  if (services.model !== null)
    for (const c of results)
      if (c.extract_due_at !== null && c.tokens - c.extracted_tokens >= windowTokens)
        jobs.push({ type: "extract", tenantId: scope.tenantId, conversationId: c.id, flush: false });
  if (jobs.length > 0) await services.jobs.send(jobs);
}
