import type { Config } from "../config";
import { needsSummary } from "../core/conversations/conversations";
import { readKeywordMarks, writeKeywordMarks } from "../db/pass-marks";
import type { JobMessage } from "../messages";

/** Conversations one sweep reads at most, per shard. */
const SCAN_LIMIT = 5000;

type ConversationRow = {
  tenant_id: string;
  id: string;
  message_count: number;
  tokens: number;
  summarized_count: number;
  summarized_tokens: number;
};

/**
 * The summary jobs the sweep re-sends on one shard: for conversations last written before `cutoff` whose messages
 * since their last summary cross the thresholds (a write past them sends the job; this catches one that was lost).
 *
 * The scan reads every conversation of the shard with a message not yet summarized, so it runs only while something
 * was written since a scan covered the shard (the keyword write counter: a message is a chunk written). A scan covers
 * the count when the last write is older than `cutoff`: every conversation written is old enough to be judged. So
 * after the last write the sweeps scan until one covers it, ten to twenty-five minutes later, and then read one row.
 * A summary whose job is lost twice (by the write and by those sweeps) waits for the conversation's next write.
 * `record`, run once the jobs are sent, keeps what the scan covered: a sweep whose send fails scans again.
 */
export async function lostSummaries(
  d1: D1Database,
  config: Config["conversations"],
  cutoff: number,
): Promise<{ messages: JobMessage[]; record: D1PreparedStatement | null }> {
  const marks = await readKeywordMarks(d1);
  if (marks !== null && marks.written === marks.conversationsWritten) return { messages: [], record: null };
  const { results } = await d1
    .prepare(
      "SELECT tenant_id, id, message_count, tokens, summarized_count, summarized_tokens FROM conversations WHERE updated_at < ? AND message_count > summarized_count LIMIT ?",
    )
    .bind(cutoff, SCAN_LIMIT)
    .all<ConversationRow>();
  const covered = marks !== null && (marks.writtenAt ?? 0) < cutoff && results.length < SCAN_LIMIT;
  const record = covered ? writeKeywordMarks(d1, { conversationsWritten: marks.written }) : null;
  const messages = results
    .filter((c) =>
      needsSummary(
        {
          messageCount: c.message_count,
          tokens: c.tokens,
          summarizedCount: c.summarized_count,
          summarizedTokens: c.summarized_tokens,
        },
        config,
      ),
    )
    .map(
      (c): JobMessage => ({
        type: "summarize",
        tenantId: c.tenant_id,
        conversationId: c.id,
        messageCount: c.message_count,
      }),
    );
  return { messages, record };
}
