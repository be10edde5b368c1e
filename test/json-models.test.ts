import { describe, expect, it } from "vitest";
import { neuronsFor } from "../src/adapters/model-prices";
import { OpenAiJsonModel } from "../src/adapters/openai-json-model";
import { WorkersAiJsonModel } from "../src/adapters/workers-ai-json-model";
import { ANSWER_SCHEMA, ANSWER_SCHEMA_NAME, SYSTEM_PROMPT } from "../src/core/extraction/contract";
import { ModelError } from "../src/errors";
import type { JsonRequest } from "../src/ports";
import {
  capacityExceeded,
  dailyAllocationSpent,
  FakeWorkersAiText,
  InferenceUpstreamError,
  jsonModeNotMet,
  LLAMA_4_SCOUT,
  type ScriptEntry,
} from "./fakes/workers-ai-text";

const QWEN3 = "@cf/qwen/qwen3-30b-a3b-fp8";
const GPT_OSS = "@cf/openai/gpt-oss-20b";

const request: JsonRequest = {
  system: SYSTEM_PROMPT,
  prompt: "Turns to extract from:\n[T1] 2026-05-01T10:00:00.000Z Ana: I moved to Lisbon last week.",
  schema: ANSWER_SCHEMA,
  schemaName: ANSWER_SCHEMA_NAME,
  maxTokens: 1500,
};
const memories = {
  memories: [
    { type: "fact", subject: "Ana", key: "home_city", text: "Ana lives in Lisbon.", when: null, sources: ["T1"] },
  ],
};
const estimatedIn = Math.ceil(
  (request.system.length + request.prompt.length + JSON.stringify(request.schema).length) / 4,
);

function workersAi(script: ScriptEntry[], model = LLAMA_4_SCOUT) {
  const fake = new FakeWorkersAiText(script, model);
  return { fake, model: new WorkersAiJsonModel(fake as unknown as Ai, model) };
}

async function modelError(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe("neuronsFor", () => {
  it("prices known models in neurons per million tokens, rounded up", () => {
    // 2,500 × 24,545 / 1e6 + 300 × 77,273 / 1e6 = 61.36 + 23.18 = 84.54
    expect(neuronsFor(LLAMA_4_SCOUT, 2500, 300)).toBe(85);
    // 1,000 × 4,625 / 1e6 + 200 × 30,475 / 1e6 = 4.625 + 6.095
    expect(neuronsFor(QWEN3, 1000, 200)).toBe(11);
    expect(neuronsFor("@cf/ibm-granite/granite-4.0-h-micro", 1_000_000, 1_000_000)).toBe(11_700);
    expect(neuronsFor(LLAMA_4_SCOUT, 1, 0)).toBe(1);
    expect(neuronsFor(LLAMA_4_SCOUT, 0, 0)).toBe(0);
  });

  it("counts nothing for a model it has no price for", () => {
    expect(neuronsFor("@cf/someone/new-model", 2500, 300)).toBe(0);
    expect(neuronsFor("constructor", 2500, 300)).toBe(0);
  });
});

describe("WorkersAiJsonModel against the strict fake binding", () => {
  it("sends the documented JSON-mode shape and reads an object response with usage", async () => {
    const { fake, model } = workersAi([{ answer: memories, usage: { prompt_tokens: 2500, completion_tokens: 300 } }]);
    const answer = await model.generate(request);
    expect(answer).toEqual({ content: memories, cut: false, tokensIn: 2500, tokensOut: 300, neurons: 85 });
    expect(model.name).toBe(LLAMA_4_SCOUT);
    expect(fake.requests).toEqual([
      {
        model: LLAMA_4_SCOUT,
        inputs: {
          messages: [
            { role: "system", content: SYSTEM_PROMPT },
            { role: "user", content: request.prompt },
          ],
          response_format: { type: "json_schema", json_schema: ANSWER_SCHEMA },
          temperature: 0,
          max_tokens: 1500,
        },
      },
    ]);
    expect(fake.remaining).toBe(0);
  });

  it("takes the usage the binding counts", async () => {
    const { model } = workersAi([{ answer: memories }]);
    const answer = await model.generate(request);
    const tokensIn = Math.ceil((SYSTEM_PROMPT.length + request.prompt.length) / 4);
    const tokensOut = Math.ceil(JSON.stringify(memories).length / 4);
    expect(answer).toEqual({
      content: memories,
      cut: false,
      tokensIn,
      tokensOut,
      neurons: Math.ceil((tokensIn * 24_545 + tokensOut * 77_273) / 1e6),
    });
  });

  it("reads a string response and estimates tokens from characters when usage is absent", async () => {
    const text = JSON.stringify(memories);
    const { model } = workersAi([{ answer: text }]);
    const answer = await model.generate(request);
    const tokensOut = Math.ceil(text.length / 4);
    expect(answer).toEqual({
      content: text,
      cut: false,
      tokensIn: estimatedIn,
      tokensOut,
      neurons: Math.ceil((estimatedIn * 24_545 + tokensOut * 77_273) / 1e6),
    });
  });

  it("reads the chat-completions shape (choices[0].message.content)", async () => {
    const { fake, model } = workersAi(
      [
        () => ({
          choices: [{ index: 0, message: { role: "assistant", content: '{"memories":[]}' }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1000, completion_tokens: 200, total_tokens: 1200 },
        }),
      ],
      QWEN3,
    );
    expect(await model.generate(request)).toEqual({
      content: '{"memories":[]}',
      cut: false,
      tokensIn: 1000,
      tokensOut: 200,
      neurons: 11,
    });
    expect(fake.requests[0]!.model).toBe(QWEN3);
  });

  it("reads the Responses shape (output_text, input_tokens/output_tokens)", async () => {
    const { model } = workersAi(
      [() => ({ output_text: '{"memories":[]}', usage: { input_tokens: 100, output_tokens: 50 } })],
      GPT_OSS,
    );
    // 100 × 18,182 / 1e6 + 50 × 27,273 / 1e6 = 1.82 + 1.36
    expect(await model.generate(request)).toEqual({
      content: '{"memories":[]}',
      cut: false,
      tokensIn: 100,
      tokensOut: 50,
      neurons: 4,
    });
  });

  it("counts no neurons for a model without a price", async () => {
    const { model } = workersAi(
      [{ answer: memories, usage: { prompt_tokens: 900, completion_tokens: 90 } }],
      "@cf/x/y",
    );
    expect(await model.generate(request)).toMatchObject({ tokensIn: 900, tokensOut: 90, neurons: 0 });
  });

  it("says an answer was cut: finish_reason length, or every output token spent", async () => {
    const cutText = '{"memories": [{"type": "fact", "subject": "Caroline", "key": null, "text": "Caroline is';
    const { model } = workersAi(
      [
        () => ({ choices: [{ message: { content: cutText }, finish_reason: "length" }] }),
        () => ({ response: cutText, usage: { prompt_tokens: 900, completion_tokens: request.maxTokens } }),
        () => ({ choices: [{ message: { content: "" }, finish_reason: "length" }] }),
        { answer: memories, usage: { prompt_tokens: 900, completion_tokens: request.maxTokens - 1 } },
      ],
      QWEN3,
    );
    expect(await model.generate(request)).toMatchObject({ content: cutText, cut: true });
    expect(await model.generate(request)).toMatchObject({ content: cutText, cut: true });
    // Cut before a word: an empty answer that says it was cut is a cut, not a missing answer.
    expect(await model.generate(request)).toMatchObject({ content: "", cut: true });
    expect(await model.generate(request)).toMatchObject({ cut: false });
  });

  it("maps a prompt longer than the model takes to `context`", async () => {
    const { model } = workersAi([new Error("5021: The input exceeded the maximum context window of this model")]);
    const error = await modelError(model.generate(request));
    expect(error.kind).toBe("context");
  });

  it("treats an empty or absent answer as the model's output failing", async () => {
    const { model } = workersAi([{ answer: "" }, () => ({ response: "  \n" }), () => ({}), () => null]);
    for (let i = 0; i < 4; i++) {
      const error = await modelError(model.generate(request));
      expect(error.kind).toBe("output");
      expect(error.message).toBe(`Workers AI ${LLAMA_4_SCOUT} returned no answer`);
    }
  });

  it("maps the platform's errors to ModelError kinds, keeping the platform's message", async () => {
    const cases: [Error, ModelError["kind"], string][] = [
      [capacityExceeded(), "capacity", "3040: Capacity temporarily exceeded, please try again."],
      [dailyAllocationSpent(), "quota", "4006: you have used up your daily free allocation of 10,000 neurons"],
      [
        new InferenceUpstreamError(
          "3036: You have used up your daily free allocation of 10,000 neurons. Please upgrade to Cloudflare's Workers Paid plan if you would like to continue usage.",
        ),
        "quota",
        "3036: You have used up",
      ],
      [new Error("Capacity temporarily exceeded, please try again."), "capacity", "Capacity temporarily exceeded"],
      [jsonModeNotMet(), "output", "JSON Mode couldn't be met"],
      [new InferenceUpstreamError("3007: Request timeout"), "failed", "3007: Request timeout"],
    ];
    const { fake, model } = workersAi(cases.map(([error]) => error));
    for (const [, kind, said] of cases) {
      const error = await modelError(model.generate(request));
      expect([error.kind, error.message]).toEqual([kind, expect.stringContaining(said)]);
      expect(error.message.startsWith(`Workers AI ${LLAMA_4_SCOUT}: `)).toBe(true);
    }
    expect(fake.remaining).toBe(0);
  });

  it("does not take a number inside a longer one for a code", async () => {
    const { model } = workersAi([new InferenceUpstreamError("5006: input 130406 items")]);
    expect((await modelError(model.generate(request))).kind).toBe("failed");
  });

  it("reports a model the binding does not know as failed", async () => {
    const fake = new FakeWorkersAiText([{ answer: memories }]);
    const error = await modelError(new WorkersAiJsonModel(fake as unknown as Ai, "@cf/meta/llama-4").generate(request));
    expect([error.kind, error.message]).toEqual([
      "failed",
      "Workers AI @cf/meta/llama-4: 5007: No such model @cf/meta/llama-4 or task",
    ]);
    expect(fake.remaining).toBe(1);
  });
});

describe("the strict fake binding", () => {
  const good = () => ({
    messages: [
      { role: "system", content: "s" },
      { role: "user", content: "u" },
    ],
    response_format: { type: "json_schema", json_schema: ANSWER_SCHEMA },
    temperature: 0,
    max_tokens: 100,
  });
  const refusals: [string, Record<string, unknown>, string][] = [
    ["temperature above 5", { ...good(), temperature: 7 }, "'/temperature' 7 is outside 0..5"],
    ["negative temperature", { ...good(), temperature: -0.1 }, "'/temperature' -0.1 is outside 0..5"],
    ["missing messages", { temperature: 0 }, "required properties at '/' are 'messages'"],
    ["empty messages", { ...good(), messages: [] }, "'/messages' must be a non-empty array"],
    [
      "a message without role",
      { ...good(), messages: [{ content: "u" }] },
      "required properties at '/messages/0' are 'role,content'",
    ],
    [
      "content parts",
      { ...good(), messages: [{ role: "user", content: [{ type: "text", text: "u" }] }] },
      "Type mismatch of '/messages/0/content', 'array' not in 'string'",
    ],
    ["fractional max_tokens", { ...good(), max_tokens: 1.5 }, "'/max_tokens' 1.5 is not a positive integer"],
    ["zero max_tokens", { ...good(), max_tokens: 0 }, "'/max_tokens' 0 is not a positive integer"],
    [
      "a wrapped json_schema",
      {
        ...good(),
        response_format: {
          type: "json_schema",
          json_schema: { name: ANSWER_SCHEMA_NAME, schema: ANSWER_SCHEMA, strict: true },
        },
      },
      "'/response_format/json_schema' is OpenAI's {name, schema} envelope; Workers AI takes the schema bare",
    ],
    [
      "json_object",
      { ...good(), response_format: { type: "json_object", json_schema: ANSWER_SCHEMA } },
      `'/response_format/type' "json_object" is not 'json_schema'`,
    ],
    [
      "an extra response_format key",
      { ...good(), response_format: { type: "json_schema", json_schema: ANSWER_SCHEMA, strict: true } },
      "'/response_format' must be exactly {type, json_schema}",
    ],
    [
      "a schema that is not an object",
      { ...good(), response_format: { type: "json_schema", json_schema: "x" } },
      "'/response_format/json_schema' must be a JSON Schema object",
    ],
    ["streaming JSON mode", { ...good(), stream: true }, "JSON Mode currently doesn't support streaming"],
    ["an unknown key", { ...good(), response: "x" }, "additional property '/response' not allowed"],
    ["an unmodelled key", { ...good(), tools: [] }, "'/tools' is documented but not modelled by this fake"],
  ];

  for (const [what, inputs, detail] of refusals) {
    it(`refuses ${what} without using the script`, async () => {
      const fake = new FakeWorkersAiText([{ answer: memories }]);
      await expect(fake.run(LLAMA_4_SCOUT, inputs)).rejects.toThrow(
        `5006: Error: oneOf at '/' not met, 0 matches: ${detail}`,
      );
      expect(fake.remaining).toBe(1);
      expect(fake.requests).toEqual([{ model: LLAMA_4_SCOUT, inputs }]);
    });
  }

  it("takes the good request, streaming off, and answers in script order", async () => {
    const fake = new FakeWorkersAiText([
      { answer: "first" },
      { answer: { n: 2 }, usage: { prompt_tokens: 5, completion_tokens: 6 } },
    ]);
    expect(await fake.run(LLAMA_4_SCOUT, { ...good(), stream: false })).toEqual({ response: "first" });
    expect(await fake.run(LLAMA_4_SCOUT, good())).toEqual({
      response: { n: 2 },
      usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 },
    });
  });

  it("refuses another model and fails a call the script did not plan for", async () => {
    const fake = new FakeWorkersAiText([]);
    await expect(fake.run(QWEN3, good())).rejects.toThrow(`5007: No such model ${QWEN3} or task`);
    await expect(fake.run(LLAMA_4_SCOUT, good())).rejects.toThrow(
      "FakeWorkersAiText: script ran out (call 2 was not scripted)",
    );
  });

  it("throws its platform errors with the platform's code first", () => {
    expect(capacityExceeded().message).toBe("3040: Capacity temporarily exceeded, please try again.");
    expect(dailyAllocationSpent().message).toMatch(
      /^4006: you have used up your daily free allocation of 10,000 neurons/,
    );
    expect(capacityExceeded().name).toBe("InferenceUpstreamError");
  });
});

describe("OpenAiJsonModel against a fake fetch", () => {
  const completion = (
    content: unknown,
    usage: unknown = { prompt_tokens: 812, completion_tokens: 64, total_tokens: 876 },
  ) =>
    Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      ...(usage ? { usage } : {}),
    });

  function endpoint(answer: () => Response | Promise<Response>, apiKey?: string) {
    const calls: { url: string; init: RequestInit }[] = [];
    const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
      calls.push({ url: String(input), init: init ?? {} });
      return answer();
    }) as typeof fetch;
    return { calls, model: new OpenAiJsonModel("https://llm.example/v1/", apiKey, "gpt-4o-mini", fetcher) };
  }

  it("posts a strict json_schema request with the key and reads the content and usage", async () => {
    const { calls, model } = endpoint(() => completion('{"memories":[]}'), "sk-test");
    expect(await model.generate(request)).toEqual({
      content: '{"memories":[]}',
      cut: false,
      tokensIn: 812,
      tokensOut: 64,
      neurons: 0,
    });
    expect(model.name).toBe("gpt-4o-mini");
    expect(calls).toHaveLength(1);
    const { url, init } = calls[0]!;
    expect(url).toBe("https://llm.example/v1/chat/completions");
    expect(init.method).toBe("POST");
    expect(init.headers).toEqual({ "content-type": "application/json", authorization: "Bearer sk-test" });
    expect(JSON.parse(init.body as string)).toEqual({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: request.prompt },
      ],
      temperature: 0,
      max_tokens: 1500,
      response_format: {
        type: "json_schema",
        json_schema: { name: ANSWER_SCHEMA_NAME, schema: ANSWER_SCHEMA, strict: true },
      },
    });
    expect(init.signal).toBeInstanceOf(AbortSignal);
    expect(init.signal!.aborted).toBe(false);
  });

  it("sends no authorization without a key and estimates tokens without usage", async () => {
    const { calls, model } = endpoint(() => completion('{"memories":[]}', null));
    expect(await model.generate(request)).toEqual({
      content: '{"memories":[]}',
      cut: false,
      tokensIn: estimatedIn,
      tokensOut: 4,
      neurons: 0,
    });
    expect(calls[0]!.init.headers).toEqual({ "content-type": "application/json" });
  });

  it("says an answer was cut when finish_reason is length, keeping what came", async () => {
    const cutText = '{"memories": [{"type": "fact"';
    const { model } = endpoint(() =>
      Response.json({ choices: [{ message: { content: cutText }, finish_reason: "length" }], usage: null }),
    );
    expect(await model.generate(request)).toMatchObject({ content: cutText, cut: true });
  });

  it("sends max_completion_tokens, or no temperature, when a 400 names the one it refuses, and remembers it", async () => {
    const bodies: Record<string, unknown>[] = [];
    let calls = 0;
    const fetcher = (async (_input: RequestInfo | URL, init?: RequestInit) => {
      const body = JSON.parse(init!.body as string) as Record<string, unknown>;
      bodies.push(body);
      calls++;
      if ("max_tokens" in body)
        return new Response(
          JSON.stringify({
            error: {
              message:
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
              param: "max_tokens",
            },
          }),
          { status: 400 },
        );
      if ("temperature" in body)
        return new Response(
          '{"error":{"message":"Unsupported value: \'temperature\' does not support 0 with this model. Only the default (1) value is supported."}}',
          { status: 400 },
        );
      return completion('{"memories":[]}');
    }) as typeof fetch;
    const model = new OpenAiJsonModel("https://llm.example/v1", undefined, "o4-mini", fetcher);
    expect(await model.generate(request)).toMatchObject({ content: '{"memories":[]}', cut: false });
    expect(calls).toBe(3);
    expect(bodies[2]).toMatchObject({ max_completion_tokens: 1500 });
    expect(bodies[2]).not.toHaveProperty("temperature");
    expect(bodies[2]).not.toHaveProperty("max_tokens");
    // The next call goes straight to the shape the endpoint takes.
    await model.generate(request);
    expect(calls).toBe(4);
  });

  it("maps a 400 for a prompt past the context length to `context`", async () => {
    const { model } = endpoint(
      () =>
        new Response(
          '{"error":{"message":"This model\'s maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","code":"context_length_exceeded"}}',
          { status: 400 },
        ),
    );
    const error = await modelError(model.generate(request));
    expect(error.kind).toBe("context");
  });

  const failures: [string, () => Response | Promise<Response>, ModelError["kind"], string][] = [
    ["429", () => new Response("rate limited", { status: 429 }), "capacity", "answered 429: rate limited"],
    ["500", () => new Response("boom", { status: 500 }), "capacity", "answered 500: boom"],
    ["503", () => new Response("", { status: 503 }), "capacity", "answered 503"],
    ["401", () => new Response("bad key", { status: 401 }), "failed", "check LLM_API_KEY"],
    ["403", () => new Response("", { status: 403 }), "failed", "check LLM_API_KEY"],
    [
      "400",
      () => new Response('{"error":{"message":"response_format not supported"}}', { status: 400 }),
      "failed",
      "the endpoint refuses this request for model gpt-4o-mini",
    ],
    ["404", () => new Response("no route", { status: 404 }), "failed", "answered 404: no route"],
    [
      "a network failure",
      () => Promise.reject(new TypeError("fetch failed")),
      "capacity",
      "unreachable: TypeError: fetch failed",
    ],
    [
      "a timeout",
      () => Promise.reject(new DOMException("The operation was aborted due to timeout", "TimeoutError")),
      "capacity",
      "unreachable: TimeoutError",
    ],
    ["empty content", () => completion(""), "output", "(model gpt-4o-mini) returned no content"],
    ["null content", () => completion(null), "output", "returned no content"],
    [
      "a refusal",
      () => Response.json({ choices: [{ message: { content: null, refusal: "I can't" } }] }),
      "output",
      "refused: I can't",
    ],
    ["no choices", () => Response.json({}), "output", "returned no content"],
    [
      "a body that is not JSON",
      () => new Response("<html>", { status: 200 }),
      "failed",
      "answered 200 with a body that is not JSON",
    ],
  ];

  for (const [what, answer, kind, said] of failures) {
    it(`maps ${what} to ${kind}`, async () => {
      const error = await modelError(endpoint(answer).model.generate(request));
      expect([error.kind, error.message]).toEqual([kind, expect.stringContaining(said)]);
      expect(error.message).toContain("https://llm.example/v1/chat/completions");
    });
  }
});
