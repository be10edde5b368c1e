import { remainingQueries } from "../../db/invocation-queries";
import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { boundedGroups } from "../../shared/bounded-groups";
import {
  type ConversationRow,
  type MessageRow,
  messagesStatement,
  readConversations,
  summaryWrites,
  toMessage,
} from "./conversations";

/**
 * Conversation tokens per read of messages: a queue batch may ask for 50 summaries of long
 * conversations, and the isolate has 128 MB (a conversation larger than this is read alone).
 */
const TOKENS_PER_READ = 250_000;
/** Conversations per read of their rows (the ids travel as one JSON parameter). */
const CONVERSATIONS_PER_READ = 500;
/** Conversations per group: a queue batch's worth (≤ 50 messages), so a batch of D1 statements stays small. */
const CONVERSATIONS_PER_GROUP = 50;
/** D1 queries a conversation's summary takes: its messages' read and two writes (each statement counts one). */
export const QUERIES_PER_SUMMARY = 3;

/** An auto-summarize job: summarize the conversation unless a summary already covers `messageCount` messages. */
export interface SummaryRequest {
  conversationId: string;
  messageCount: number;
}

export interface SummaryRun {
  /** Conversations summarized. */
  summarized: number;
  /** Requests this invocation had no D1 queries left for (D1_QUERIES_PER_INVOCATION): the caller queues them again. */
  left: SummaryRequest[];
}

/**
 * The auto-summarize jobs of one tenant (a queue batch's summarize messages, merged): each conversation
 * that no summary covers up to the most messages asked for gets a new version; the others, and
 * conversations deleted meanwhile, get none, so a re-delivered job changes nothing. Round trips: one
 * read of the conversations, then per group (TOKENS_PER_READ, CONVERSATIONS_PER_GROUP) one read of their messages
 * (one batch) and one write (one batch). One job at a time would pay four per conversation.
 * A group is no larger than the invocation's D1 queries left allow (QUERIES_PER_SUMMARY each: 16 on the Free
 * plan's 50); the conversations left over are returned, to be queued again.
 */
export async function autoSummarize(
  scope: TenantScope,
  services: Services,
  requests: SummaryRequest[],
): Promise<SummaryRun> {
  const covering = new Map<string, number>();
  for (const r of requests)
    covering.set(r.conversationId, Math.max(covering.get(r.conversationId) ?? 0, r.messageCount));
  const ids = [...covering.keys()];
  const conversations: ConversationRow[] = [];
  for (let i = 0; i < ids.length; i += CONVERSATIONS_PER_READ)
    conversations.push(...(await readConversations(scope, ids.slice(i, i + CONVERSATIONS_PER_READ))));
  let due = conversations.filter((c) => c.summarizedCount < covering.get(c.id)!);
  let summarized = 0;
  while (due.length > 0) {
    const room = Math.min(CONVERSATIONS_PER_GROUP, Math.floor(remainingQueries() / QUERIES_PER_SUMMARY));
    if (room === 0) break;
    const group = boundedGroups(due, { count: room, size: TOKENS_PER_READ }, (c) => c.tokens)[0]!;
    const read = await scope.d1.batch<MessageRow>(group.map((c) => messagesStatement(scope, c.id)));
    const writes = await Promise.all(
      group.map((c, i) => summaryWrites(scope, services, c, read[i]!.results.map(toMessage))),
    );
    await scope.d1.batch(writes.flat());
    summarized += group.length;
    due = due.slice(group.length);
  }
  return { summarized, left: due.map((c) => ({ conversationId: c.id, messageCount: covering.get(c.id)! })) };
}
