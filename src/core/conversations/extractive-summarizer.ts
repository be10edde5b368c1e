import type { ConversationSummary, Summarizer, SummaryMessage } from "../../ports";
import { contentWords, fitSentences, type ScoredSentence, sentences, truncateToTokens } from "../../shared/extractive";
import type { TokenCounter } from "../../shared/tokens";

const CODE_BLOCK = /```[\s\S]*?```/g;
const HAS_CODE_BLOCK = /```[\s\S]*?```/;
/** Words that mark a decision, an obligation, a problem or a plan: what a reader of a summary needs. */
const SIGNAL =
  /\b(decid\w*|agree\w*|must|should|need\w*|important|todo|fix\w*|bug|error|because|will|plan\w*|deadline|remember|prefer\w*|never|always)\b/i;
const MAX_CODE_BLOCKS = 10;
const MAX_INSIGHTS = 5;

/**
 * Deterministic extractive summaries: code blocks kept verbatim, the highest-scoring sentences (by
 * how often their words recur in the conversation, the message's importance and signal words) as
 * the summary within the token limit and as key insights, and an importance score from the
 * messages' importance and content.
 */
export class ExtractiveSummarizer implements Summarizer {
  readonly name = "extractive";

  constructor(private readonly counter: TokenCounter) {}

  async summarize(messages: SummaryMessage[], tokenLimit: number): Promise<ConversationSummary> {
    const codeBlocks = [...new Set(messages.flatMap((m) => m.content.match(CODE_BLOCK) ?? []))].slice(
      0,
      MAX_CODE_BLOCKS,
    );
    const parts = messages.flatMap((m) =>
      sentences(m.content.replace(CODE_BLOCK, " ")).map((sentence) => ({ sentence, message: m })),
    );
    const frequency = new Map<string, number>();
    for (const p of parts) for (const w of contentWords(p.sentence)) frequency.set(w, (frequency.get(w) ?? 0) + 1);
    const scored: ScoredSentence[] = parts.map((p, index) => {
      const words = contentWords(p.sentence);
      let recurrence = 0;
      for (const w of words) recurrence += Math.min(1, ((frequency.get(w) ?? 1) - 1) * 0.25);
      const score =
        recurrence / Math.sqrt(Math.max(1, words.size)) +
        p.message.importance +
        (SIGNAL.test(p.sentence) ? 0.5 : 0) +
        (words.size > 2 ? 0.1 : 0);
      return { sentence: p.sentence, index, tokens: this.counter.count(p.sentence), score };
    });
    const fitted =
      fitSentences(scored, tokenLimit, this.counter) ??
      truncateToTokens(messages.map((m) => m.content).join("\n"), tokenLimit, this.counter);
    const keyInsights = [...scored]
      .filter((s) => contentWords(s.sentence).size >= 3)
      .sort((a, b) => b.score - a.score || a.index - b.index)
      .slice(0, MAX_INSIGHTS)
      .sort((a, b) => a.index - b.index)
      .map((s) => s.sentence);
    return { summary: fitted?.content ?? "", codeBlocks, keyInsights, importanceScore: importanceScore(messages) };
  }
}

/** 0..1: mostly the messages' mean importance, raised by their peak and by code or decisions. */
export function importanceScore(messages: SummaryMessage[]): number {
  if (messages.length === 0) return 0;
  const mean = messages.reduce((s, m) => s + m.importance, 0) / messages.length;
  const peak = Math.max(...messages.map((m) => m.importance));
  const signal =
    messages.filter((m) => HAS_CODE_BLOCK.test(m.content) || SIGNAL.test(m.content)).length / messages.length;
  return Math.round(Math.min(1, 0.6 * mean + 0.2 * peak + 0.2 * signal) * 1000) / 1000;
}
