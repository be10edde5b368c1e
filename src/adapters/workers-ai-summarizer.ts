import type { ConversationSummary, Summarizer, SummaryMessage } from "../ports";

/**
 * Abstractive summaries from a Workers AI text model; code blocks, key insights and the importance
 * score still come from the extractive summarizer, so every field stays deterministic but the prose.
 * The text is cut to the token limit by `fit`.
 */
export class WorkersAiSummarizer implements Summarizer {
  readonly name: string;

  constructor(
    private readonly ai: Ai,
    private readonly model: string,
    private readonly extractive: Summarizer,
    private readonly fit: (text: string, tokenLimit: number) => string,
  ) {
    this.name = `workers-ai:${model}`;
  }

  async summarize(messages: SummaryMessage[], tokenLimit: number): Promise<ConversationSummary> {
    const base = await this.extractive.summarize(messages, tokenLimit);
    const transcript = messages
      .map((m) => `${m.role}: ${m.content}`)
      .join("\n")
      .slice(-24_000);
    const result = (await this.ai.run(
      this.model as keyof AiModels,
      {
        messages: [
          {
            role: "system",
            content:
              "Summarize the conversation for an AI agent's long-term memory: decisions, facts, open tasks. Plain prose, no preamble.",
          },
          { role: "user", content: transcript },
        ],
        max_tokens: tokenLimit,
      } as never,
    )) as { response?: string };
    const text =
      typeof result.response === "string" && result.response.trim()
        ? this.fit(result.response.trim(), tokenLimit)
        : base.summary;
    return { ...base, summary: text };
  }
}
