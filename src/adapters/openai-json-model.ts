import { ModelError } from "../errors";
import type { JsonAnswer, JsonModel, JsonRequest } from "../ports";
import { contextTooLong, estimateInputTokens, estimateTokens, reportedTokens } from "./workers-ai-json-model";

/** Longest a call may take; a model that has not answered by then is treated as busy. */
const TIMEOUT_MS = 60_000;

/** What an endpoint's 400 refused that the request can do without: `max_tokens` (renamed) and `temperature`. */
interface Adaptations {
  /** Send the output limit as `max_completion_tokens` (OpenAI's reasoning models refuse `max_tokens`). */
  maxCompletionTokens: boolean;
  /** Leave the temperature to the model (some accept only their default). */
  noTemperature: boolean;
}

/** Any OpenAI-compatible `/chat/completions` endpoint with structured outputs (strict JSON Schema). */
export class OpenAiJsonModel implements JsonModel {
  readonly name: string;
  /** Learned from the endpoint's refusals, kept for the isolate's later calls. */
  private readonly adapt: Adaptations = { maxCompletionTokens: false, noTemperature: false };

  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string | undefined,
    private readonly model: string,
    // Called as a plain function: workerd's fetch called as this object's method throws "Illegal invocation".
    private readonly fetcher: typeof fetch = (input, init) => fetch(input, init),
  ) {
    this.name = model;
  }

  async generate(request: JsonRequest): Promise<JsonAnswer> {
    const url = `${this.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    for (let attempt = 1; ; attempt++) {
      const response = await this.post(url, request);
      if (response.ok) return this.answer(response, url, request);
      const said = `LLM endpoint ${url} answered ${response.status}: ${(await response.text().catch(() => "")).slice(0, 300)}`;
      // A 400 that names a parameter this request can do without: the same request again, adapted (at most twice).
      if (response.status === 400 && attempt <= 2 && this.adaptTo(said)) continue;
      throw httpError(response.status, said, this.model);
    }
  }

  private async post(url: string, request: JsonRequest): Promise<Response> {
    const limit = this.adapt.maxCompletionTokens
      ? { max_completion_tokens: request.maxTokens }
      : { max_tokens: request.maxTokens };
    try {
      return await this.fetcher(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: this.model,
          messages: [
            { role: "system", content: request.system },
            { role: "user", content: request.prompt },
          ],
          ...(this.adapt.noTemperature ? {} : { temperature: 0 }),
          ...limit,
          response_format: {
            type: "json_schema",
            json_schema: { name: request.schemaName, schema: request.schema, strict: true },
          },
        }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      // Unreachable, reset or timed out: the endpoint may answer later.
      throw new ModelError("capacity", `LLM endpoint ${url} unreachable: ${errorText(error)}`);
    }
  }

  /** Whether the refusal names something to change, and changes it. */
  private adaptTo(said: string): boolean {
    if (!this.adapt.maxCompletionTokens && /max_tokens/.test(said)) {
      this.adapt.maxCompletionTokens = true;
      return true;
    }
    if (!this.adapt.noTemperature && /temperature/i.test(said)) {
      this.adapt.noTemperature = true;
      return true;
    }
    return false;
  }

  private async answer(response: Response, url: string, request: JsonRequest): Promise<JsonAnswer> {
    let body: {
      choices?: { message?: { content?: unknown; refusal?: unknown }; finish_reason?: unknown }[];
      usage?: Record<string, unknown>;
    };
    try {
      body = await response.json();
    } catch (error) {
      throw new ModelError(
        "failed",
        `LLM endpoint ${url} answered 200 with a body that is not JSON: ${errorText(error)}`,
      );
    }
    const choice = body.choices?.[0];
    const content = choice?.message?.content;
    const tokensOut = reportedTokens(body.usage?.completion_tokens);
    const cut = choice?.finish_reason === "length" || (tokensOut !== undefined && tokensOut >= request.maxTokens);
    if ((typeof content !== "string" || content.trim() === "") && !cut) {
      const refusal = typeof choice?.message?.refusal === "string" ? `: refused: ${choice.message.refusal}` : "";
      throw new ModelError("output", `LLM endpoint ${url} (model ${this.model}) returned no content${refusal}`);
    }
    const text = typeof content === "string" ? content : "";
    // Without usage (some local servers send none), ~4 characters a token: an estimate.
    return {
      content: text,
      cut,
      tokensIn: reportedTokens(body.usage?.prompt_tokens) ?? estimateInputTokens(request),
      tokensOut: tokensOut ?? estimateTokens(text.length),
      // Neurons are Workers AI's unit; other endpoints bill elsewhere.
      neurons: 0,
    };
  }
}

function httpError(status: number, said: string, model: string): ModelError {
  if (status === 429 || status >= 500) return new ModelError("capacity", said);
  if (contextTooLong(said)) return new ModelError("context", said);
  if (status === 401 || status === 403)
    return new ModelError("failed", `${said} (check LLM_API_KEY: the endpoint refused it or wants one)`);
  if (status === 400)
    return new ModelError(
      "failed",
      `${said} (the endpoint refuses this request for model ${model}; it may not support strict json_schema response_format)`,
    );
  return new ModelError("failed", said);
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
