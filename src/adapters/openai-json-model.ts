import { ModelError } from "../errors";
import type { JsonAnswer, JsonModel, JsonRequest } from "../ports";
import { estimateInputTokens, estimateTokens, reportedTokens } from "./workers-ai-json-model";

/** Longest a call may take; a model that has not answered by then is treated as busy. */
const TIMEOUT_MS = 60_000;

/** Any OpenAI-compatible `/chat/completions` endpoint with structured outputs (strict JSON Schema). */
export class OpenAiJsonModel implements JsonModel {
  readonly name: string;

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
    let response: Response;
    try {
      response = await this.fetcher(url, {
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
          temperature: 0,
          max_tokens: request.maxTokens,
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
    if (!response.ok) throw await httpError(response, url, this.model);
    let body: { choices?: { message?: { content?: unknown; refusal?: unknown } }[]; usage?: Record<string, unknown> };
    try {
      body = await response.json();
    } catch (error) {
      throw new ModelError(
        "failed",
        `LLM endpoint ${url} answered 200 with a body that is not JSON: ${errorText(error)}`,
      );
    }
    const message = body.choices?.[0]?.message;
    const content = message?.content;
    if (typeof content !== "string" || content.trim() === "") {
      const refusal = typeof message?.refusal === "string" ? `: refused: ${message.refusal}` : "";
      throw new ModelError("output", `LLM endpoint ${url} (model ${this.model}) returned no content${refusal}`);
    }
    // Without usage (some local servers send none), ~4 characters a token: an estimate.
    return {
      content,
      tokensIn: reportedTokens(body.usage?.prompt_tokens) ?? estimateInputTokens(request),
      tokensOut: reportedTokens(body.usage?.completion_tokens) ?? estimateTokens(content.length),
      // Neurons are Workers AI's unit; other endpoints bill elsewhere.
      neurons: 0,
    };
  }
}

async function httpError(response: Response, url: string, model: string): Promise<ModelError> {
  const said = `LLM endpoint ${url} answered ${response.status}: ${(await response.text().catch(() => "")).slice(0, 300)}`;
  if (response.status === 429 || response.status >= 500) return new ModelError("capacity", said);
  if (response.status === 401 || response.status === 403)
    return new ModelError("failed", `${said} (check LLM_API_KEY: the endpoint refused it or wants one)`);
  if (response.status === 400)
    return new ModelError(
      "failed",
      `${said} (the endpoint refuses this request for model ${model}; it may not support strict json_schema response_format)`,
    );
  return new ModelError("failed", said);
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
