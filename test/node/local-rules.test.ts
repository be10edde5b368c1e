import { describe, expect, it } from "vitest";
import {
  ANSWER_SCHEMA,
  ANSWER_SCHEMA_NAME,
  type AnsweredMemory,
  extractionPrompt,
  MEMORY_KINDS,
  type PromptTurn,
  SYSTEM_PROMPT,
} from "../../src/core/extraction/contract";
import { LocalRulesModel, localMemories } from "../../src/core/extraction/local-rules";
import { ModelError } from "../../src/errors";

// The offline stand-in for memory extraction (src/core/extraction/local-rules.ts): what its rules answer for
// concrete turns, in the contract's shape.

const SAID = Date.parse("2023-05-08T13:56:00Z"); // a Monday
const turn = (ref: string, text: string, speaker = "Caroline", at = SAID): PromptTurn => ({
  ref,
  at,
  speaker,
  role: null,
  text,
});
const model = new LocalRulesModel();

async function answer(context: PromptTurn[], turns: PromptTurn[], maxTokens = 2048) {
  return model.generate({
    system: SYSTEM_PROMPT,
    prompt: extractionPrompt(context, turns),
    schema: ANSWER_SCHEMA,
    schemaName: ANSWER_SCHEMA_NAME,
    maxTokens,
  });
}

async function memories(...texts: string[]): Promise<AnsweredMemory[]> {
  const { content } = await answer(
    [],
    texts.map((text, i) => turn(`T${i + 1}`, text)),
  );
  return (content as { memories: AnsweredMemory[] }).memories;
}

/** The answer checked against ANSWER_SCHEMA field by field, by hand. */
function expectSchemaShape(content: unknown, refs: string[]) {
  const schema = ANSWER_SCHEMA as {
    required: string[];
    properties: { memories: { items: { required: string[]; properties: Record<string, unknown> } } };
  };
  expect(content).toBeTypeOf("object");
  expect(Object.keys(content as object)).toEqual(schema.required);
  const list = (content as { memories: unknown }).memories;
  expect(Array.isArray(list)).toBe(true);
  const fields = schema.properties.memories.items.required;
  expect(fields.sort()).toEqual(Object.keys(schema.properties.memories.items.properties).sort());
  for (const m of list as Record<string, unknown>[]) {
    expect(Object.keys(m).sort()).toEqual([...fields].sort());
    expect(MEMORY_KINDS).toContain(m.type);
    expect(m.subject).toBeTypeOf("string");
    expect((m.subject as string).length).toBeGreaterThan(0);
    expect(m.key === null || typeof m.key === "string").toBe(true);
    if (typeof m.key === "string") expect(m.key).toMatch(/^[a-z0-9]+(?:_[a-z0-9]+)*$/);
    expect(m.text).toBeTypeOf("string");
    expect((m.text as string).trim().length).toBeGreaterThan(0);
    expect(m.text).not.toMatch(/[\r\n]/);
    expect(m.when === null || typeof m.when === "string").toBe(true);
    if (m.type === "event") expect(m.when).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    else expect(m.when).toBeNull();
    expect(Array.isArray(m.sources)).toBe(true);
    expect((m.sources as unknown[]).length).toBe(1);
    for (const source of m.sources as unknown[]) {
      expect(source).toBeTypeOf("string");
      expect(refs).toContain(source);
    }
  }
}

describe("LocalRulesModel", () => {
  it("is named local-rules, counts characters / 4 as tokens and no neurons", async () => {
    expect(model.name).toBe("local-rules");
    const turns = [turn("T1", "I live in Boston now.")];
    const result = await answer([], turns);
    expect(result.tokensIn).toBe(Math.ceil((SYSTEM_PROMPT.length + extractionPrompt([], turns).length) / 4));
    expect(result.tokensOut).toBe(Math.ceil(JSON.stringify(result.content).length / 4));
    expect(result.neurons).toBe(0);
  });

  it("a fact with its key: 'I live in Boston now.' is Caroline's home_city", async () => {
    const [fact, ...rest] = await memories("I live in Boston now.");
    expect(rest).toEqual([]);
    expect(fact).toEqual({
      type: "fact",
      subject: "Caroline",
      key: "home_city",
      text: "Caroline lives in Boston now.",
      when: null,
      sources: ["T1"],
    });
    expect(fact!.text).toContain("Caroline");
    expect(fact!.text).toContain("Boston");
  });

  it("other facts: name, occupation, employer, 'my X is Y' keyed by X, 'I have a X' without a key", async () => {
    const found = await memories(
      "My name is Caroline Smith.",
      "I work as a nurse.",
      "I work at Lincoln High.",
      "I'm a software engineer.",
      "My phone number is 555-0100.",
      "I have a dog named Max.",
      "My sister is a teacher.",
    );
    expect(found.map((m) => [m.type, m.key, m.text])).toEqual([
      ["fact", "name", "Caroline's name is Caroline Smith."],
      ["fact", "occupation", "Caroline works as a nurse."],
      ["fact", "employer", "Caroline works at Lincoln High."],
      ["fact", "occupation", "Caroline is a software engineer."],
      ["fact", "phone_number", "Caroline's phone number is 555-0100."],
      ["fact", null, "Caroline has a dog named Max."],
      // A person is described, not a value of Caroline's that a later one replaces.
      ["fact", null, "Caroline's sister is a teacher."],
    ]);
  });

  it("preferences: likes and dislikes without a key, 'my favorite X is Y' keyed favorite_x", async () => {
    const found = await memories(
      "I love pottery and painting.",
      "Honestly, I can't stand country music.",
      "My favourite color is green.",
    );
    expect(found.map((m) => [m.type, m.key, m.text])).toEqual([
      ["preference", null, "Caroline loves pottery and painting."],
      ["preference", null, "Caroline can't stand country music."],
      ["preference", "favorite_color", "Caroline's favourite color is green."],
    ]);
  });

  it("instructions: imperatives to the assistant, about the speaker", async () => {
    const found = await memories(
      "Always answer in French.",
      "Please don't use emojis.",
      "When I ask for code, remember to add tests.",
      "Keep your answers short, please. Never mind.",
    );
    expect(found.map((m) => [m.type, m.key, m.text])).toEqual([
      ["instruction", null, "Caroline wants the assistant to always answer in French."],
      ["instruction", null, "Caroline wants the assistant not to use emojis."],
      ["instruction", null, "Caroline wants the assistant, when Caroline asks for code, to add tests."],
    ]);
  });

  it("an imperative to another person in the conversation is no instruction to the assistant", async () => {
    const { content } = await answer(
      [turn("T1", "I'm having a rough week.", "Melanie")],
      [turn("T2", "Always be kind to yourself. Never give up!")],
    );
    expect(content).toEqual({ memories: [] });
  });

  it("tasks: 'I need to', 'remind me to', 'I'm going to' without a date; a relative time resolved to a date", async () => {
    const found = await memories(
      "I need to renew my passport.",
      "Remind me to call the dentist.",
      "I'm going to learn Spanish.",
      "I have to pay rent tomorrow.",
    );
    expect(found.map((m) => [m.type, m.key, m.text, m.when])).toEqual([
      ["task", null, "Caroline needs to renew Caroline's passport.", null],
      ["task", null, "Caroline wants to be reminded to call the dentist.", null],
      ["task", null, "Caroline is going to learn Spanish.", null],
      ["task", null, "Caroline has to pay rent on 2023-05-09.", null],
    ]);
  });

  it("events: 'yesterday' in a turn of 2023-05-08T13:56Z happened on 2023-05-07, the time words left out", async () => {
    const [event, ...rest] = await memories("I went to a support group yesterday.");
    expect(rest).toEqual([]);
    expect(event).toEqual({
      type: "event",
      subject: "Caroline",
      key: null,
      text: "Caroline went to a support group.",
      when: "2023-05-07",
      sources: ["T1"],
    });
  });

  it("events: other times, resolved against the turn's own timestamp", async () => {
    const found = await memories(
      "Last Friday, I ran a charity race.",
      "My husband and I went camping two weeks ago.",
      "I'm flying to Paris next Friday.",
      "We painted a mural last week.",
    );
    expect(found.map((m) => [m.type, m.when, m.text])).toEqual([
      ["event", "2023-05-05", "Caroline ran a charity race."],
      ["event", "2023-04-24", "Caroline's husband and Caroline went camping."],
      ["event", "2023-05-12", "Caroline is flying to Paris."],
      ["event", "2023-05-01", "Caroline and others painted a mural."],
    ]);
    // The same words said another day mean another day.
    const { content } = await answer(
      [],
      [turn("T9", "I went to a support group yesterday.", "Caroline", Date.parse("2024-01-01T08:00:00Z"))],
    );
    expect((content as { memories: AnsweredMemory[] }).memories[0]!.when).toBe("2023-12-31");
  });

  it("a dated 'I moved to <city>' is an event and the home_city fact", async () => {
    const found = await memories("I moved to Boston last month.");
    expect(found.map((m) => [m.type, m.key, m.when, m.text])).toEqual([
      ["event", null, "2023-04-01", "Caroline moved to Boston."],
      ["fact", "home_city", null, "Caroline moved to Boston in April 2023."],
    ]);
  });

  it("context turns are not extracted from", async () => {
    const { content } = await answer(
      [turn("C1", "I live in Denver and I love jazz."), turn("C2", "I need to buy milk.", "Melanie")],
      [turn("T1", "I love hiking.")],
    );
    expect(content).toEqual({
      memories: [
        {
          type: "preference",
          subject: "Caroline",
          key: null,
          text: "Caroline loves hiking.",
          when: null,
          sources: ["T1"],
        },
      ],
    });
  });

  it("skips questions, greetings, short turns, sentences about 'you' and sentences no rule matches", async () => {
    expect(
      await memories(
        "Do you live in Boston?",
        "What did you do yesterday? Did I tell you about it?",
        "Hi Melanie! Good morning!",
        "Me too!",
        "That sounds great, thanks for sharing.",
        "I told you I moved to Boston.",
        "The weather is nice.",
      ),
    ).toEqual([]);
    // A greeting before a statement does not hide it; a question beside one does not either.
    const found = await memories("Hey Mel! I love pottery. How are you?");
    expect(found.map((m) => m.text)).toEqual(["Caroline loves pottery."]);
  });

  it("sources are the ref of the turn each memory comes from; the subject is that turn's speaker", async () => {
    const { content } = await answer(
      [],
      [
        turn("A7", "I love jazz.", "Caroline"),
        turn("B12", "I work as a counselor.", "Melanie"),
        turn("C3", "I need to fix my bike.", "user"),
      ],
    );
    const found = (content as { memories: AnsweredMemory[] }).memories;
    expect(found.map((m) => [m.subject, m.sources, m.text])).toEqual([
      ["Caroline", ["A7"], "Caroline loves jazz."],
      ["Melanie", ["B12"], "Melanie works as a counselor."],
      ["user", ["C3"], "The user needs to fix the user's bike."],
    ]);
  });

  it("the assistant's own turns are not memories about it", async () => {
    const { content } = await answer([], [turn("A1", "I love helping people with code.", "assistant")]);
    expect(content).toEqual({ memories: [] });
  });

  it("answers in ANSWER_SCHEMA's shape, every field present", async () => {
    const turns = [
      turn("T1", "Hey! I live in Boston now. I love jazz, but I hate rain."),
      turn("T2", "Always answer in French. I need to renew my passport."),
      turn("T3", "Yesterday I went to a support group. My favorite food is sushi. What about you?"),
    ];
    const { content } = await answer([turn("C1", "I moved here in 2020.")], turns);
    expectSchemaShape(content, ["T1", "T2", "T3"]);
    expect((content as { memories: AnsweredMemory[] }).memories.map((m) => m.type).sort()).toEqual([
      "event",
      "fact",
      "instruction",
      "preference",
      "preference",
      "preference",
      "task",
    ]);
  });

  it("is deterministic: the same prompt twice, the same answer", async () => {
    const turns = [
      turn("T1", "I went to a support group yesterday. I love pottery. My name is Caroline."),
      turn("T2", "I'm going to Paris next Friday and I need to pack."),
    ];
    const first = await answer([turn("C1", "I live in Boston.")], turns);
    const second = await answer([turn("C1", "I live in Boston.")], turns);
    expect(second).toEqual(first);
    expect((first.content as { memories: unknown[] }).memories.length).toBeGreaterThan(0);
  });

  it("reads turns whose newlines the prompt folded, sentence by sentence", async () => {
    const prompt = extractionPrompt([], [turn("T1", "I live in Boston.\nI love jazz.\r\n\r\nI need to call my mom")]);
    expect(prompt.split("\n").at(-1)).toBe(
      "[T1] 2023-05-08T13:56:00.000Z Caroline: I live in Boston. I love jazz. I need to call my mom",
    );
    expect(localMemories(prompt).map((m) => [m.type, m.text, m.sources])).toEqual([
      ["fact", "Caroline lives in Boston.", ["T1"]],
      ["preference", "Caroline loves jazz.", ["T1"]],
      ["task", "Caroline needs to call Caroline's mom.", ["T1"]],
    ]);
  });

  it("no memory twice in one answer", async () => {
    const found = await memories("I love jazz. I love jazz!", "i love JAZZ");
    expect(found.map((m) => [m.type, m.text, m.sources])).toEqual([["preference", "Caroline loves jazz.", ["T1"]]]);
  });

  it("stops at the last whole memory that fits maxTokens, and fails when not even an empty answer does", async () => {
    const turns = [turn("T1", "I love jazz. I hate rain. I need to sleep more.")];
    const all = await answer([], turns);
    expect((all.content as { memories: unknown[] }).memories).toHaveLength(3);
    const cut = await answer([], turns, 40);
    expect((cut.content as { memories: unknown[] }).memories).toHaveLength(1);
    expect(cut.tokensOut).toBeLessThanOrEqual(40);
    await expect(answer([], turns, 2)).rejects.toBeInstanceOf(ModelError);
  });
});
