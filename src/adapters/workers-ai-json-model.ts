import { ModelError } from "../errors";
import type { JsonAnswer, JsonModel, JsonRequest } from "../ports";
import { neuronsFor } from "./model-prices";

/** Workers AI JSON mode (developers.cloudflare.com/workers-ai/features/json-mode), one messages call, no streaming. */
export class WorkersAiJsonModel implements JsonModel {
  readonly name: string;

  constructor(
    private readonly ai: Ai,
    private readonly model: string,
  ) {
    this.name = model;
  }

  async generate(request: JsonRequest): Promise<JsonAnswer> {
    let result: unknown;
    try {
      result = await this.ai.run(
        this.model as keyof AiModels,
        {
          messages: [
            { role: "system", content: request.system },
            { role: "user", content: request.prompt },
          ],
          // Native @cf/ models take the schema bare, not OpenAI's {name, schema, strict} envelope.
          response_format: { type: "json_schema", json_schema: request.schema },
          temperature: 0,
          max_tokens: request.maxTokens,
        } as never,
      );
    } catch (error) {
      throw workersAiError(this.model, error);
    }
    const usage =
      (typeof result === "object" && result !== null ? (result as { usage?: Record<string, unknown> }).usage : {}) ??
      {};
    const reportedOut = reportedTokens(usage.completion_tokens ?? usage.output_tokens);
    const cut = finishedForLength(result) || (reportedOut !== undefined && reportedOut >= request.maxTokens);
    const content = answerContent(result) ?? (cut ? "" : undefined);
    if (content === undefined) throw new ModelError("output", `Workers AI ${this.model} returned no answer`);
    // Without usage the counts are estimates (estimateTokens), and so are the neurons.
    const tokensIn = reportedTokens(usage.prompt_tokens ?? usage.input_tokens) ?? estimateInputTokens(request);
    const tokensOut =
      reportedOut ?? estimateTokens(typeof content === "string" ? content.length : JSON.stringify(content).length);
    return { content, cut, tokensIn, tokensOut, neurons: neuronsFor(this.model, tokensIn, tokensOut) };
  }
}

/**
 * The answer from whichever shape the model returns: `choices[0].message.content` (Qwen3, Granite),
 * `response` as a string or as an already parsed object (Llama 4 Scout in JSON mode), `output_text` (gpt-oss).
 */
function answerContent(result: unknown): unknown {
  if (typeof result !== "object" || result === null) return undefined;
  const shaped = result as {
    choices?: { message?: { content?: unknown } }[];
    response?: unknown;
    output_text?: unknown;
  };
  const candidates = [shaped.choices?.[0]?.message?.content, shaped.response, shaped.output_text];
  for (const candidate of candidates) {
    if (typeof candidate === "string" && candidate.trim() !== "") return candidate;
    if (typeof candidate === "object" && candidate !== null) return candidate;
  }
  return undefined;
}

/** Whether the model stopped at its output limit, in the shapes models report it (OpenAI-like choices, or flat). */
function finishedForLength(result: unknown): boolean {
  if (typeof result !== "object" || result === null) return false;
  const shaped = result as { choices?: { finish_reason?: unknown }[]; finish_reason?: unknown };
  return shaped.choices?.[0]?.finish_reason === "length" || shaped.finish_reason === "length";
}

/** Whether an error says the prompt is longer than the model's context (asking for fewer turns helps). */
export function contextTooLong(message: string): boolean {
  return /context[ _](length|window)|maximum context|too many (input )?tokens|input is too long|prompt is too long/i.test(
    message,
  );
}

/**
 * The binding throws errors whose message starts with the platform's internal code ("3040: Capacity temporarily
 * exceeded, please try again."); JSON mode's failure has no documented code, only its text.
 */
export function workersAiError(model: string, error: unknown): ModelError {
  const message = error instanceof Error ? error.message : String(error);
  const said = `Workers AI ${model}: ${message}`;
  if (/\b3040\b/.test(message) || /Capacity temporarily exceeded/i.test(message))
    return new ModelError("capacity", said);
  if (/\b(3036|4006)\b/.test(message) || /daily free allocation/i.test(message)) return new ModelError("quota", said);
  if (/JSON Mode couldn't be met/i.test(message)) return new ModelError("output", said);
  if (contextTooLong(message)) return new ModelError("context", said);
  return new ModelError("failed", said);
}

/** A token count an API reported, or undefined when it reported none (or nonsense). */
export function reportedTokens(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** ~4 characters a token: a rough count for when an API reports no usage. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** A request's input tokens, estimated; the schema counts because it is put in front of the model too. */
export function estimateInputTokens(request: JsonRequest): number {
  return estimateTokens(request.system.length + request.prompt.length + JSON.stringify(request.schema).length);
}
