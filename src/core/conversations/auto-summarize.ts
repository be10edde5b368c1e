import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { boundedGroups } from "../shared/bounded-groups";
import { messagesStatement, readConversations, summaryWrites, toMessage, type ConversationRow, type MessageRow } from "./conversations";

/**
 * Conversation tokens per read of messages: a queue batch may ask for 50 summaries of long
 * conversations, and the isolate has 128 MB (a conversation larger than this is read alone).
 */
const TOKENS_PER_READ = 250_000;
/** Conversations per read of their rows (the ids travel as one JSON parameter). */
const CONVERSATIONS_PER_READ = 500;
/** Conversations per group: a queue batch's worth (≤ 50 messages), so a batch of D1 statements stays small. */
const CONVERSATIONS_PER_GROUP = 50;

/** An auto-summarize job: summarize the conversation unless a summary already covers `messageCount` messages. */
export interface SummaryRequest {
  conversationId: string;
  messageCount: number;
}

/**
 * The auto-summarize jobs of one tenant (a queue batch's summarize messages, merged): each conversation
 * that no summary covers up to the most messages asked for gets a new version; the others, and
 * conversations deleted meanwhile, get none, so a re-delivered job changes nothing. Round trips: one
 * read of the conversations, then per group (TOKENS_PER_READ, CONVERSATIONS_PER_GROUP) one read of their messages
 * (one batch) and one write (one batch). One job at a time paid four per conversation. Returns how
 * many conversations were summarized.
 */
export async function autoSummarize(scope: TenantScope, services: Services, requests: SummaryRequest[]): Promise<number> {
  const covering = new Map<string, number>();
  for (const r of requests) covering.set(r.conversationId, Math.max(covering.get(r.conversationId) ?? 0, r.messageCount));
  const ids = [...covering.keys()];
  const conversations: ConversationRow[] = [];
  for (let i = 0; i < ids.length; i += CONVERSATIONS_PER_READ) conversations.push(...(await readConversations(scope, ids.slice(i, i + CONVERSATIONS_PER_READ))));
  const due = conversations.filter((c) => c.summarizedCount < covering.get(c.id)!);
  for (const group of boundedGroups(due, { count: CONVERSATIONS_PER_GROUP, size: TOKENS_PER_READ }, (c) => c.tokens)) {
    const read = await scope.d1.batch<MessageRow>(group.map((c) => messagesStatement(scope, c.id)));
    const writes = await Promise.all(group.map((c, i) => summaryWrites(scope, services, c, read[i]!.results.map(toMessage))));
    await scope.d1.batch(writes.flat());
  }
  return due.length;
}
