import { KNOWN_KEYS_HEADING, type PromptTurn, parsePrompt } from "../../src/core/extraction/contract";

/**
 * An OpenAI-compatible `/chat/completions` endpoint (a `fetch`) that answers the extraction contract the way real
 * models slip, beside the strict Workers AI fake (workers-ai-text.ts). A `truth` function says what a perfect model
 * would answer for a window; the endpoint then slips as it is told:
 * - memories with one slip each (`slip`): a type in another case, `when` of "" or "null", a partial date, a ref
 *   written "[T3]", "t3" or " T3 ", a key of "";
 * - an invalid memory beside the good ones (`invalid`);
 * - answers cut for length (`cutAfter` memories: the JSON stops mid-memory, finish_reason "length");
 * - answers that are not JSON (`broken`: the first N calls), or whose JSON comes inside prose and a fence (`wrap`);
 * - answers written in another syntax than JSON's or in another shape than the contract's (`syntax`: test/bench/answer-syntax.mjs);
 * - an endpoint that refuses `max_tokens` or `temperature` with a 400 naming it (`refuses`), or a prompt longer than
 *   `contextChars` (400 context_length_exceeded), or answers 401 for the first N calls (`unauthorized`);
 * - a delay before it answers a prompt that holds a marker (`hold`), to run two jobs against each other.
 * It records every request, with the prompt's turns and its "Known keys" section.
 */
export interface NoisyModelOptions {
  truth: (window: FakeWindow) => FakeMemory[];
  slip?: (memory: FakeMemory, index: number, window: FakeWindow) => Record<string, unknown>;
  invalid?: (window: FakeWindow) => Record<string, unknown> | null;
  cutAfter?: number;
  broken?: number;
  wrap?: boolean;
  syntax?: (memories: Record<string, unknown>[]) => string;
  refuses?: ("max_tokens" | "temperature")[];
  contextChars?: number;
  unauthorized?: number;
  hold?: { marker: string; until: Promise<void> };
}

/** A window as the fake reads it from the prompt. */
export interface FakeWindow {
  /** The turns to extract from. */
  turns: PromptTurn[];
  context: PromptTurn[];
  /** Subject to the keys the prompt lists for them. */
  known: Map<string, string[]>;
  prompt: string;
}

export interface FakeMemory {
  type: string;
  subject: string;
  key: string | null;
  text: string;
  when: string | null;
  sources: string[];
}

export interface NoisyRequest {
  body: Record<string, any>;
  window: FakeWindow;
  status: number;
}

export class NoisyModel {
  readonly requests: NoisyRequest[] = [];
  private calls = 0;

  constructor(private readonly options: NoisyModelOptions) {}

  /** The endpoint, as fetch: wire it with vi.spyOn(globalThis, "fetch").mockImplementation(model.fetch). */
  readonly fetch = async (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const body = JSON.parse(String(init!.body)) as Record<string, any>;
    const prompt = String(body.messages?.[1]?.content ?? "");
    const window = readWindow(prompt);
    const answer = (status: number, value: unknown) => {
      this.requests.push({ body, window, status });
      return Response.json(value, { status });
    };
    this.calls++;
    const o = this.options;
    for (const refused of o.refuses ?? []) {
      if (refused in body)
        return answer(400, {
          error: { message: `Unsupported parameter: '${refused}' is not supported with this model.`, param: refused },
        });
    }
    if (this.calls <= (o.unauthorized ?? 0))
      return answer(401, { error: { message: "Incorrect API key provided: sk-wrong." } });
    if (o.contextChars !== undefined && prompt.length > o.contextChars)
      return answer(400, {
        error: {
          message: `This model's maximum context length is ${o.contextChars} characters. However, your messages resulted in ${prompt.length}.`,
          code: "context_length_exceeded",
        },
      });
    if (o.hold && prompt.includes(o.hold.marker)) await o.hold.until;
    if (this.calls <= (o.broken ?? 0))
      return answer(200, completion("Sure! Here are the memories you asked for.", "stop"));
    const truthful = o.truth(window);
    const memories: Record<string, unknown>[] = truthful.map((m, i) => (o.slip ? o.slip(m, i, window) : { ...m }));
    const invalid = o.invalid?.(window);
    if (invalid) memories.splice(Math.min(1, memories.length), 0, invalid);
    const text = o.syntax ? o.syntax(memories) : JSON.stringify({ memories });
    if (o.cutAfter !== undefined && memories.length > o.cutAfter) {
      // Stop halfway through the first memory past the limit, as a model out of output tokens does.
      const whole = JSON.stringify({ memories: memories.slice(0, o.cutAfter) }).slice(0, -2);
      const next = JSON.stringify(memories[o.cutAfter]);
      const cut = `${whole}${o.cutAfter > 0 ? ", " : ""}${next.slice(0, Math.floor(next.length / 2))}`;
      return answer(200, completion(cut, "length"));
    }
    const wrapped = o.wrap
      ? `Here are the memories I found:\n\`\`\`json\n${text}\n\`\`\`\nLet me know if you need more.`
      : text;
    return answer(200, completion(wrapped, "stop"));
  };
}

function completion(content: string, finishReason: string) {
  return {
    id: "chatcmpl-noisy",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: finishReason }],
    usage: { prompt_tokens: 400, completion_tokens: Math.ceil(content.length / 4) },
  };
}

function readWindow(prompt: string): FakeWindow {
  const parsed = parsePrompt(prompt);
  const known = new Map<string, string[]>();
  const lines = prompt.split("\n");
  const at = lines.indexOf(KNOWN_KEYS_HEADING);
  if (at >= 0) {
    for (const line of lines.slice(at + 1)) {
      const match = /^- (.+): (.+)$/.exec(line);
      if (!match) break;
      known.set(match[1]!, match[2]!.split(", "));
    }
  }
  return {
    turns: parsed.filter((p) => p.extract).map((p) => p.turn),
    context: parsed.filter((p) => !p.extract).map((p) => p.turn),
    known,
    prompt,
  };
}

/** Every slip a model makes, one per memory in turn: what `slip` applies when a test wants them all. */
export const SLIPS: ((m: FakeMemory) => Record<string, unknown>)[] = [
  (m) => ({ ...m, type: m.type[0]!.toUpperCase() + m.type.slice(1) }),
  (m) => ({ ...m, when: m.when ?? "" }),
  (m) => ({ ...m, sources: m.sources.map((s) => `[${s}]`) }),
  (m) => ({ ...m, key: m.key ?? "" }),
  (m) => ({ ...m, type: m.type.toUpperCase(), sources: m.sources.map((s) => ` ${s.toLowerCase()} `) }),
  (m) => ({ ...m, when: m.when ?? "null" }),
];

/** Slips in a memory's fields beyond the contract's own words: a plural type, refs as numbers or in one string, a
 * date in words, a field under a near name. */
export const FIELD_SLIPS: ((m: FakeMemory) => Record<string, unknown>)[] = [
  (m) => ({ ...m, type: `${m.type}s` }),
  (m) => ({ ...m, sources: m.sources.map((s) => Number(s.slice(1))) }),
  (m) => ({ ...m, sources: m.sources.join(", ") }),
  (m) => ({ ...m, when: m.when && /^\d{4}-\d{2}-\d{2}$/.test(m.when) ? writtenDay(m.when) : m.when }),
  ({ text, ...m }) => ({ ...m, content: text }),
  ({ sources, type, ...m }) => ({ ...m, kind: type, refs: sources }),
];

const MONTH_NAMES = "January February March April May June July August September October November December".split(" ");

/** "2023-05-07" as "May 7, 2023". */
function writtenDay(day: string): string {
  const [y, m, d] = day.split("-").map(Number);
  return `${MONTH_NAMES[m! - 1]} ${d}, ${y}`;
}
