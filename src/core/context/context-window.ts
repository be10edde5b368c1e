import { truncateToTokens } from "../../shared/extractive";
import type { TokenCounter } from "../../shared/tokens";

export const DOCUMENT_SEPARATOR = "\n\n";

export interface ContextWindow {
  context: string;
  tokenCount: number;
  included: number;
  truncated: number;
  omitted: number;
}

/**
 * Concatenates documents in order until `maxTokens`; the first one that does not fit is cut at a token
 * boundary and the rest are left out. Per-document counts decide, then one exact count of the final
 * text checks (BPE can merge across a boundary), trimming the last part if it is ever over.
 */
export function buildContextWindow(
  documents: { content: string }[],
  maxTokens: number,
  counter: TokenCounter,
): ContextWindow {
  const separatorTokens = counter.count(DOCUMENT_SEPARATOR);
  const parts: string[] = [];
  let used = 0;
  let truncated = 0;
  for (const doc of documents) {
    const joiner = parts.length > 0 ? separatorTokens : 0;
    const tokens = counter.count(doc.content);
    if (used + joiner + tokens <= maxTokens) {
      parts.push(doc.content);
      used += joiner + tokens;
      continue;
    }
    const cut = truncateToTokens(doc.content, maxTokens - used - joiner, counter);
    if (cut) {
      parts.push(cut.content);
      truncated = 1;
    }
    break;
  }
  let context = parts.join(DOCUMENT_SEPARATOR);
  let tokenCount = counter.count(context);
  while (tokenCount > maxTokens && parts.length > 0) {
    const last = parts.pop()!;
    const room = maxTokens - counter.count(parts.join(DOCUMENT_SEPARATOR)) - (parts.length > 0 ? separatorTokens : 0);
    const cut = truncateToTokens(last, room, counter);
    if (cut) parts.push(cut.content);
    truncated = 1;
    context = parts.join(DOCUMENT_SEPARATOR);
    tokenCount = counter.count(context);
  }
  return { context, tokenCount, included: parts.length, truncated, omitted: documents.length - parts.length };
}
