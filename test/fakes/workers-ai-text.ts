/**
 * A strict stand-in for the Workers AI binding's text generation, holding requests to the messages form of
 * @cf/meta/llama-4-scout-17b-16e-instruct's documented input schema (cloudflare-docs
 * src/content/workers-ai-models/llama-4-scout-17b-16e-instruct.json; workers-types
 * Ai_Cf_Meta_Llama_4_Scout_17B_16E_Instruct_Messages) plus JSON mode's rules (workers-ai/features/json-mode).
 * It answers from a script and records every request it receives.
 *
 * Refusals read like the platform's: "5007: No such model ..." is the documented error table's wording and
 * "5006: Error: oneOf at '/' not met, 0 matches: ..." the binding's observed schema refusal; the detail after it
 * is ours, as is the wording for the two mistakes the platform would not refuse at the door (a wrapped
 * {name, schema} json_schema, which it would take as a schema of its own; tools and the like, not modelled here).
 */

export const LLAMA_4_SCOUT = "@cf/meta/llama-4-scout-17b-16e-instruct";

/** What the binding throws: its message starts with the platform's internal code (workerd ai-api.ts). */
export class InferenceUpstreamError extends Error {
  override readonly name = "InferenceUpstreamError";
}

export const capacityExceeded = () =>
  new InferenceUpstreamError("3040: Capacity temporarily exceeded, please try again.");
export const dailyAllocationSpent = () =>
  new InferenceUpstreamError(
    "4006: you have used up your daily free allocation of 10,000 neurons, please upgrade to Cloudflare's Workers Paid plan if you would like to continue usage.",
  );
export const jsonModeNotMet = () => new InferenceUpstreamError("JSON Mode couldn't be met");

export interface TextRequest {
  model: string;
  inputs: Record<string, any>;
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/**
 * One scripted call: an answer (an object comes back as `{response: <object>, usage}`, as Llama 4 Scout returns
 * JSON mode; a string as `{response: <string>}` with no usage), an error to throw, or a function of the request
 * whose result is returned as the binding's whole result (or which throws).
 */
export type ScriptEntry =
  | { answer: string | Record<string, unknown>; usage?: TokenUsage }
  | Error
  | ((request: TextRequest) => unknown);

/** Keys of the messages form this fake checks. */
const CHECKED_KEYS = new Set([
  "messages",
  "response_format",
  "stream",
  "max_tokens",
  "temperature",
  "top_p",
  "top_k",
  "seed",
  "repetition_penalty",
  "frequency_penalty",
  "presence_penalty",
]);
/** Documented keys this fake does not model: a test that needs them should extend the fake first. */
const UNMODELLED_KEYS = new Set(["functions", "tools", "guided_json", "raw"]);
/** Documented ranges (inclusive). */
const RANGES: Record<string, [number, number]> = {
  temperature: [0, 5],
  top_p: [0, 2],
  top_k: [1, 50],
  seed: [1, 9_999_999_999],
  repetition_penalty: [0, 2],
  frequency_penalty: [0, 2],
  presence_penalty: [0, 2],
};

export class FakeWorkersAiText {
  /** Every request received, refused ones included, in order. */
  readonly requests: TextRequest[] = [];
  private readonly script: ScriptEntry[];

  constructor(
    script: ScriptEntry[],
    readonly model: string = LLAMA_4_SCOUT,
  ) {
    this.script = [...script];
  }

  /** Scripted entries not yet used. */
  get remaining(): number {
    return this.script.length;
  }

  async run(model: string, inputs: unknown): Promise<unknown> {
    const request = { model, inputs: inputs as Record<string, any> };
    this.requests.push(request);
    if (model !== this.model) throw new InferenceUpstreamError(`5007: No such model ${model} or task`);
    const problem = inputProblem(inputs);
    if (problem) throw new InferenceUpstreamError(`5006: Error: oneOf at '/' not met, 0 matches: ${problem}`);
    const entry = this.script.shift();
    if (entry === undefined)
      throw new Error(`FakeWorkersAiText: script ran out (call ${this.requests.length} was not scripted)`);
    if (entry instanceof Error) throw entry;
    if (typeof entry === "function") return entry(request);
    if (typeof entry.answer === "string") return { response: entry.answer };
    const usage = entry.usage ?? {
      prompt_tokens: Math.ceil(
        (request.inputs.messages as { content: string }[]).reduce((sum, m) => sum + m.content.length, 0) / 4,
      ),
      completion_tokens: Math.ceil(JSON.stringify(entry.answer).length / 4),
    };
    return { response: entry.answer, usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } };
  }
}

/** Why the inputs do not match the messages form, or null when they do. */
function inputProblem(inputs: unknown): string | null {
  if (!isPlainObject(inputs)) return "Type mismatch of '/', not an object";
  for (const key of Object.keys(inputs)) {
    if (UNMODELLED_KEYS.has(key)) return `'/${key}' is documented but not modelled by this fake`;
    if (!CHECKED_KEYS.has(key)) return `additional property '/${key}' not allowed`;
  }
  const messages = inputs.messages;
  if (messages === undefined) return "required properties at '/' are 'messages'";
  if (!Array.isArray(messages) || messages.length === 0) return "'/messages' must be a non-empty array";
  for (const [i, message] of messages.entries()) {
    if (!isPlainObject(message) || typeof message.role !== "string" || message.content === undefined)
      return `required properties at '/messages/${i}' are 'role,content'`;
    // The docs' schema takes a string; the types' content parts (images) are not what JSON mode is used with here.
    if (typeof message.content !== "string")
      return `Type mismatch of '/messages/${i}/content', '${Array.isArray(message.content) ? "array" : typeof message.content}' not in 'string'`;
  }
  for (const [key, [min, max]] of Object.entries(RANGES)) {
    const value = inputs[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value)) return `Type mismatch of '/${key}', not a number`;
    if (value < min || value > max) return `'/${key}' ${value} is outside ${min}..${max}`;
  }
  if (inputs.max_tokens !== undefined && !(Number.isInteger(inputs.max_tokens) && inputs.max_tokens > 0))
    return `'/max_tokens' ${JSON.stringify(inputs.max_tokens)} is not a positive integer`;
  if (inputs.stream !== undefined && typeof inputs.stream !== "boolean")
    return "Type mismatch of '/stream', not a boolean";
  if (inputs.response_format !== undefined) {
    const format = inputs.response_format;
    if (!isPlainObject(format) || Object.keys(format).sort().join(",") !== "json_schema,type")
      return "'/response_format' must be exactly {type, json_schema}";
    if (format.type !== "json_schema")
      return `'/response_format/type' ${JSON.stringify(format.type)} is not 'json_schema'`;
    if (!isPlainObject(format.json_schema)) return "'/response_format/json_schema' must be a JSON Schema object";
    if ("schema" in format.json_schema && "name" in format.json_schema)
      return "'/response_format/json_schema' is OpenAI's {name, schema} envelope; Workers AI takes the schema bare";
    if (inputs.stream === true) return "JSON Mode currently doesn't support streaming";
  }
  return null;
}

function isPlainObject(value: unknown): value is Record<string, any> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
