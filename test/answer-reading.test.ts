import { describe, expect, it } from "vitest";
import { AnswerError, readAnswer } from "../src/core/extraction/answer";
import { findMemories, jsonSpans, withoutTrailingCommas } from "../src/core/extraction/answer-json";
import { partOf, type Turn, type Window } from "../src/core/extraction/windows";

// How an answer is read when a model slips in its shape or its fields, as real ones do beside the contract's own
// slips (learning-answers.test.ts): each slip here has one plain meaning, read as meant and said in the reason;
// what has none is still dropped or refused.

const turn = (i: number): Turn => ({
  id: `turn-${i}`,
  position: i,
  speaker: "Caroline",
  role: "user",
  content: `Turn ${i}.`,
  tokens: 3,
  createdAt: Date.UTC(2023, 4, 8, 13, i),
});
const WINDOW: Window = { id: "w", ...partOf([turn(1), turn(2), turn(3)], [], 0) };

const memory = (over: Record<string, unknown> = {}) => ({
  type: "fact",
  subject: "Caroline",
  key: null,
  text: "Caroline is a counselor.",
  when: null,
  sources: ["T1"],
  ...over,
});
const answer = (...memories: unknown[]) => JSON.stringify({ memories });

describe("the answer's JSON, where a model puts it", () => {
  it.each([
    ["in a Markdown fence", `\`\`\`json\n${answer(memory())}\n\`\`\``],
    ["after a sentence", `Here are the memories:\n${answer(memory())}`],
    ["between sentences, fenced", `Sure.\n\`\`\`\n${answer(memory())}\n\`\`\`\nLet me know if you need more.`],
    [
      "with trailing commas",
      '{"memories": [{"type": "fact", "subject": "Caroline", "key": null, "text": "Caroline is a counselor.", "when": null, "sources": ["T1",],},],}',
    ],
    ["as a bare array", JSON.stringify([memory()])],
    ["as a bare array after a sentence", `Memories: ${JSON.stringify([memory()])}`],
    ["with memories as a JSON string", JSON.stringify({ memories: JSON.stringify([memory()]) })],
    ["after a bracketed aside that is not the list", `I found [1] memory: ${answer(memory())}`],
    ["inside another object", JSON.stringify({ result: { memories: [memory()] } })],
    ["under a capitalised or singular name", JSON.stringify({ Memory: [memory()] })],
    ["as one memory without its list", JSON.stringify(memory())],
    [
      "as one memory with its text under `memory`",
      JSON.stringify({ ...memory(), text: undefined, memory: "Caroline is a counselor." }),
    ],
    [
      "with Python's None and single quotes",
      `{'memories': [{'type': 'fact', 'subject': 'Caroline', 'key': None, 'text': "Caroline is a counselor.", 'when': None, 'sources': ['T1']}]}`,
    ],
    [
      "with comments and unquoted keys",
      `{memories: [ // the one memory\n{type: "fact", subject: "Caroline", key: null, /* none */ text: "Caroline is a counselor.", when: null, sources: ["T1"]}]}`,
    ],
    [
      "with a line break inside a string",
      '{"memories": [{"type": "fact", "subject": "Caroline", "key": null, "text": "Caroline is a\ncounselor.", "when": null, "sources": ["T1"]}]}',
    ],
    [
      "with curly quotes",
      "{“memories”: [{“type”: “fact”, “subject”: “Caroline”, “key”: null, “text”: “Caroline is a counselor.”, “when”: null, “sources”: [“T1”]}]}",
    ],
  ])("reads the memories %s", (_, content) => {
    const read = readAnswer(content, WINDOW);
    expect(read.memories.map((m) => [m.text, m.sources.map((s) => s.id)])).toEqual([
      ["Caroline is a counselor.", ["turn-1"]],
    ]);
    expect(read.dropped).toEqual([]);
  });

  it("says how the shape was read in each memory's reason", () => {
    const [m] = readAnswer(`Here you go: ${JSON.stringify([memory()])}`, WINDOW).memories;
    expect(m!.mended).toEqual([
      "the JSON read from inside the answer's other text",
      "a bare array read as the memories",
    ]);
    const [plain] = readAnswer(answer(memory()), WINDOW).memories;
    expect(plain!.mended).toEqual([]);
  });

  it.each([
    ["prose only", "Sure! Here are the memories you asked for.", /not valid JSON/],
    ["JSON cut mid-way", '{"memories": [ oops', /not valid JSON/],
    ["an object without memories", '{"facts": []}', /must be a JSON object with "memories"/],
    ["memories not a list", '{"memories": "none"}', /must be a JSON object with "memories"/],
    ["a string of JSON that is not a list", JSON.stringify({ memories: '{"a": 1}' }), /"memories"/],
    ["a bracketed aside and no list", "I found [1] memory but cannot say it.", /not valid JSON/],
  ])("refuses %s whole", (_, content, message) => {
    expect(() => readAnswer(content, WINDOW)).toThrow(AnswerError);
    expect(() => readAnswer(content, WINDOW)).toThrow(message);
  });

  it("reads memories given one after another without a list, or as an object's values, and says so", () => {
    const second = memory({ text: "Caroline runs.", sources: ["T2"] });
    const lines = `${JSON.stringify(memory())}\n${JSON.stringify(second)}`;
    const read = readAnswer(lines, WINDOW);
    expect(read.memories.map((m) => m.text)).toEqual(["Caroline is a counselor.", "Caroline runs."]);
    expect(read.memories[0]!.mended).toContain("memories given without a list read as the list");
    const values = readAnswer(JSON.stringify({ memories: { a: memory(), b: second } }), WINDOW);
    expect(values.memories.map((m) => m.text)).toEqual(["Caroline is a counselor.", "Caroline runs."]);
    expect(values.memories[0]!.mended).toEqual(["memories given as an object read as its values"]);
    const missingComma = `{"memories": [${JSON.stringify(memory())} ${JSON.stringify(second)}]}`;
    expect(readAnswer(missingComma, WINDOW).memories[1]!.mended).toEqual(["the answer's JSON syntax repaired"]);
    expect(readAnswer('{"memories": null}', WINDOW)).toEqual({ memories: [], dropped: [] });
  });

  it("never makes a memory whole that an unflagged cut left unfinished, in JSON or in repaired syntax", () => {
    const cut = (whole: string) => whole.slice(0, whole.indexOf("Caroline runs") + 10);
    const json = `Sure: ${answer(memory(), memory({ text: "Caroline runs marathons.", sources: ["T2"] }))}`;
    const single = json.replace(/"/g, "'");
    for (const text of [cut(json), cut(single)])
      expect(
        readAnswer(text, WINDOW).memories.map((m) => m.text),
        text,
      ).toEqual(["Caroline is a counselor."]);
  });

  it("refuses to repair a runaway answer past the repair's bound, in little time", () => {
    const started = performance.now();
    expect(() => readAnswer(`{'a${"'".repeat(200_000)}}`, WINDOW)).toThrow(AnswerError);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("keeps the whole memories of a cut bare array, as of a cut object", () => {
    const whole = JSON.stringify([memory(), memory({ text: "Caroline runs.", sources: ["T2"] })]);
    const cut = `${whole.slice(0, whole.indexOf("Caroline runs"))}`;
    const read = readAnswer(cut, WINDOW, true);
    expect(read.memories.map((m) => m.text)).toEqual(["Caroline is a counselor."]);
    expect(read.dropped).toEqual(["the answer was cut after 1 whole memories: the rest dropped"]);
  });

  it("reads an answer of many unclosed brackets in one pass (a runaway model's output stays cheap)", () => {
    const runaway = `${"{[".repeat(100_000)}${", ".repeat(100_000)} ${answer(memory())}`;
    expect(readAnswer(runaway, WINDOW).memories.map((m) => m.text)).toEqual(["Caroline is a counselor."]);
  });

  it("finds spans outside strings only, and drops only commas before a closing bracket", () => {
    expect(jsonSpans('a {"x": "}{"} b [1, [2]] c {')).toEqual(['{"x": "}{"}', "[1, [2]]"]);
    expect(withoutTrailingCommas('{"a": "x,}", "b": [1, 2 , ] , }')).toBe('{"a": "x,}", "b": [1, 2  ]  }');
    // Indices are UTF-16 units: a character outside the BMP before a comma shifts nothing.
    expect(withoutTrailingCommas('{"a": "😀", "b": [1,],}')).toBe('{"a": "😀", "b": [1]}');
    expect(findMemories({ memories: [] })).toEqual({ list: [], mended: [] });
    expect(findMemories(42)).toBeNull();
  });
});

describe("a memory's fields, as a model slips in them", () => {
  const read = (over: Record<string, unknown>) => readAnswer(answer(memory(over)), WINDOW);

  it.each([
    ["facts", "fact"],
    ["Preferences", "preference"],
    ["EVENTS", "event"],
    ["tasks", "task"],
  ])("reads the plural type %s as %s", (type, kind) => {
    const [m] = read({ type }).memories;
    expect(m!.kind).toBe(kind);
    expect(m!.mended).toEqual([`type '${type}' read as ${kind}`]);
  });

  it("still drops a type that names no kind, plural or not", () => {
    for (const type of ["opinions", "s", "factss"]) {
      const { memories, dropped } = read({ type });
      expect(memories).toEqual([]);
      expect(dropped[0]).toMatch(new RegExp(`type '${type}' is not one of fact, preference, event, instruction, task`));
    }
  });

  it.each([
    [[3], ["turn-3"], "ref '3' read as T3"],
    [["2"], ["turn-2"], "ref '2' read as T2"],
    ["T1, T3", ["turn-1", "turn-3"], null],
    ["T1 and t2", ["turn-1", "turn-2"], "ref 't2' read as T2"],
    ["[T2][T3]", ["turn-2", "turn-3"], "ref '[T2]' read as T2"],
    ["T2", ["turn-2"], null],
    ["turn 3", ["turn-3"], "ref 'turn 3' read as T3"],
    [["Turn #2", "(T3)"], ["turn-2", "turn-3"], "ref '(T3)' read as T3"],
    ["T1:", ["turn-1"], "ref 'T1:' read as T1"],
    ["turns T1 and T2", ["turn-1", "turn-2"], null],
  ])("reads the refs %j", (sources, ids, note) => {
    const [m] = read({ sources }).memories;
    expect(m!.sources.map((s) => s.id)).toEqual(ids);
    if (note) expect(m!.mended).toContain(note);
  });

  it("drops refs with no plain meaning: a number the window does not hold, a fraction, words", () => {
    expect(read({ sources: [9] }).dropped.join(" ")).toMatch(/cites '9', which the window does not hold/);
    expect(read({ sources: [1.5] }).dropped.join(" ")).toMatch(/sources must be an array of refs like "T3"/);
    expect(read({ sources: "the first turn" }).dropped.join(" ")).toMatch(/cites 'the first turn'/);
    expect(read({ sources: "T1 or so" }).dropped.join(" ")).toMatch(/cites 'T1 or so'/);
  });

  it.each([
    ["2023/05/07", Date.UTC(2023, 4, 7), "day"],
    ["May 7, 2023", Date.UTC(2023, 4, 7), "day"],
    ["7 May 2023", Date.UTC(2023, 4, 7), "day"],
    ["September 21st, 2023", Date.UTC(2023, 8, 21), "day"],
    ["Sept 3 2023", Date.UTC(2023, 8, 3), "day"],
    ["May 2023", Date.UTC(2023, 4, 1), "month"],
    ["dec 2022", Date.UTC(2022, 11, 1), "month"],
    ["2023-5-7", Date.UTC(2023, 4, 7), "day"],
    [2023, Date.UTC(2023, 0, 1), "year"],
  ])("reads the date %s", (when, ms, precision) => {
    const [m] = read({ type: "event", when }).memories;
    expect([m!.when, m!.whenPrecision]).toEqual([ms, precision]);
    expect(m!.mended.join(" ")).toMatch(/^when '.+' read as the (day|month from|year from) \d{4}-\d{2}-\d{2}$/);
  });

  it("gives a memory with no subject the one speaker of its sources, and drops it when they are two", () => {
    for (const subject of [undefined, null, " "]) {
      const [m] = read({ subject, text: "Loves hiking." }).memories;
      expect([m!.subject, m!.mended]).toEqual([
        "Caroline",
        ["no subject given: read as Caroline, who said its source turns"],
      ]);
    }
    const two: Window = { id: "two", ...partOf([turn(1), { ...turn(2), speaker: "Melanie" }], [], 0) };
    const { memories, dropped } = readAnswer(answer(memory({ subject: null, sources: ["T1", "T2"] })), two);
    expect(memories).toEqual([]);
    expect(dropped).toEqual([
      'memories[0] ("Caroline is a counselor."): subject must be a non-empty string: memory dropped',
    ]);
    expect(read({ subject: 7 }).dropped[0]).toMatch(/subject must be a non-empty string: memory dropped$/);
  });

  it("reads a type with punctuation around it, and drops a key that is not text without dropping its memory", () => {
    expect(read({ type: "Fact." }).memories[0]!.mended).toEqual(["type 'Fact.' read as fact"]);
    expect(read({ type: "[event]" }).memories[0]!.kind).toBe("event");
    for (const key of [3, false]) {
      const { memories, dropped } = read({ key });
      expect(memories.map((m) => [m.text, m.key])).toEqual([["Caroline is a counselor.", null]]);
      expect(dropped).toEqual([
        `memories[0] ("Caroline is a counselor."): key must be a string or null (got ${typeof key}): key dropped, the memory kept`,
      ]);
    }
  });

  it("drops a date with no one meaning, not its memory: a day that does not exist, a numeric date, a relative time", () => {
    for (const when of ["February 30, 2023", "05/07/2023", "last week", "Mayday 2023", "2023/13/01", 23, 2023.5]) {
      const { memories, dropped } = read({ type: "event", when });
      expect(
        memories.map((m) => [m.text, m.when, m.whenPrecision]),
        String(when),
      ).toEqual([["Caroline is a counselor.", null, null]]);
      expect(dropped).toHaveLength(1);
      expect(dropped[0]).toMatch(
        /^memories\[0\] \("Caroline is a counselor\."\): when .+: when dropped, the memory kept \(valid from its turn\)$/,
      );
    }
  });

  it("reads fields under near names when the contract's own is absent, and says so", () => {
    const given = { kind: "preference", content: "Caroline likes tea.", refs: ["T2"] };
    const raw = { subject: "Caroline", key: null, when: null, ...given };
    const [m] = readAnswer(answer(raw), WINDOW).memories;
    expect(m).toMatchObject({ kind: "preference", text: "Caroline likes tea.", sources: [WINDOW.refs.get("T2")] });
    expect(m!.mended).toEqual([
      "field 'kind' read as type",
      "field 'content' read as text",
      "field 'refs' read as sources",
    ]);
    // The contract's own name wins over a near one.
    const [both] = readAnswer(answer({ ...memory(), content: "Something else." }), WINDOW).memories;
    expect(both!.text).toBe("Caroline is a counselor.");
    expect(both!.mended).toEqual([]);
  });
});

describe("a memory's sources, checked against its words", () => {
  const said = (i: number, content: string, speaker = "Caroline"): Turn => ({ ...turn(i), content, speaker });
  const chat: Window = {
    id: "chat",
    ...partOf(
      [
        said(1, "Hey Mel! Good to see you. How have you been?"),
        said(2, "I went to a LGBTQ support group yesterday and it was so powerful."),
        said(3, "Wow, that's awesome, Caroline! What happened there?", "Melanie"),
        said(4, "The transgender stories were inspiring; I felt accepted at the group."),
      ],
      [],
      0,
    ),
  };
  const cite = (text: string, sources: string[]) => readAnswer(answer(memory({ text, sources })), chat).memories[0]!;

  it("gives a memory cited with no source the window holds the one turn that holds its words, or drops it", () => {
    const text = "Caroline went to an LGBTQ support group.";
    for (const sources of [[], null, undefined, ["T9"]]) {
      const m = readAnswer(answer(memory({ text, sources })), chat).memories[0]!;
      expect(m.sources.map((s) => s.id)).toEqual(["turn-2"]);
      expect(m.mended.join(" ")).toMatch(/(no source the window holds was given|read as T2), 4 of its words in T2$/);
    }
    const { memories, dropped } = readAnswer(answer(memory({ text: "Caroline is kind.", sources: [] })), chat);
    expect(memories).toEqual([]);
    expect(dropped).toEqual(['memories[0] ("Caroline is kind.") has no source the window holds: memory dropped']);
  });

  it("re-points a ref off by one to the one turn that holds the memory's words, and says so", () => {
    const m = cite("Caroline attended an LGBTQ support group and found it powerful.", ["T3"]);
    expect(m.sources.map((s) => s.id)).toEqual(["turn-2"]);
    expect(m.mended).toEqual(["sources T3 read as T2: no word of the memory is in it, 4 of its words in T2"]);
  });

  it("keeps what a memory cites when a cited turn shares a word, when it paraphrases, or when turns tie", () => {
    // T4 shares "group": the model may well have meant it.
    expect(cite("Caroline attended an LGBTQ support group.", ["T4"]).sources.map((s) => s.id)).toEqual(["turn-4"]);
    // Other words for its turn, and no turn holds two of them: kept as cited.
    expect(cite("Caroline felt welcome among peers.", ["T4"]).mended).toEqual([]);
    // "group" and "powerful" in T2, "group" and "inspiring" in T4: two turns share the most alike.
    const tie = cite("Caroline found the group inspiring and powerful.", ["T1"]);
    expect(tie.sources.map((s) => s.id)).toEqual(["turn-1"]);
    expect(tie.mended).toEqual([]);
  });

  it("does not count the subject's name or a date as a shared word", () => {
    // "Caroline" is in T3 (Melanie's turn) and the date in none: only "support group" decides, which is T2's.
    const m = cite("Caroline attended a support group on 7 May 2023.", ["T3"]);
    expect(m.sources.map((s) => s.id)).toEqual(["turn-2"]);
  });
});
