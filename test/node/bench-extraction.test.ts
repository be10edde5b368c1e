import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { coveredTurns, type StoredTurn } from "../bench/conversation-ingest.mjs";
import { type LocomoSample, measureExtraction } from "../bench/extraction.mjs";
import { createOracle, keptObservations, parseOracleTurns } from "../bench/oracle-observations.mjs";
import { measureQa } from "../bench/qa.mjs";

// The extraction and qa bench suites (test/bench/extraction.mjs, qa.mjs) end to end against a scripted fake of the
// server's tools, on a made-up conversation in LoCoMo's shape: no wrangler, no ../shared, so the suites cannot rot
// unnoticed between bench runs.

const SAMPLE: LocomoSample = {
  sample_id: "conv-test",
  conversation: {
    speaker_a: "Ana",
    speaker_b: "Ben",
    session_1_date_time: "1:56 pm on 8 May, 2023",
    session_1: [
      { speaker: "Ana", dia_id: "D1:1", text: "Hi Ben! I started pottery classes last week." },
      { speaker: "Ben", dia_id: "D1:2", text: "Nice! Where are they?" },
      { speaker: "Ana", dia_id: "D1:3", text: "At the studio on Elm Street, every Tuesday." },
      { speaker: "Ben", dia_id: "D1:4", text: "I adopted a beagle named Max.", blip_caption: "a beagle on a sofa" },
    ],
    session_2_date_time: "10:00 am on 20 May, 2023",
    session_2: [
      { speaker: "Ana", dia_id: "D2:1", text: "I moved to Lisbon yesterday." },
      { speaker: "Ben", dia_id: "D2:2", text: "Wow, congratulations!" },
      { speaker: "Ana", dia_id: "D2:3", text: "My new job at the museum starts Monday." },
      { speaker: "Ben", dia_id: "D2:4", text: "Max says hi." },
    ],
  },
  // What the oracle model answers: LoCoMo's observations, the turns they cite in any of the data set's spellings.
  observation: {
    session_1_observation: {
      Ana: [["Ana takes pottery classes at the studio on Elm Street.", "D1:1; D1:3"]],
      Ben: [["Ben adopted a beagle named Max.", ["D1:4"]]],
    },
    session_2_observation: {
      Ana: [
        ["Ana moved to Lisbon.", "D2:1"],
        ["Ana has a new job at the museum.", "D2:3"],
      ],
      Ben: [["Ben congratulated Ana and says Max says hi.", "D2:2,D2:4"]],
    },
  },
  qa: [
    {
      question: "Where does Ana take pottery classes?",
      answer: "the studio on Elm Street",
      evidence: ["D1:1", "D1:3"],
      category: 4,
    },
    { question: "When did Ana move to Lisbon?", answer: "19 May 2023", evidence: ["D2:1"], category: 2 },
    // Adversarial: the beagle is Ben's.
    { question: "What is the name of Ana's beagle?", evidence: ["D1:4"], category: 5 },
  ],
};
const [POTTERY, MOVE, BEAGLE] = SAMPLE.qa.map((qa) => qa.question) as [string, string, string];

/** What extraction derived, by id: their sources are turns (dia ids) of the made-up conversation. */
const MEMORIES: Record<string, { kind: string; text: string; sources: string[]; validFrom: string; session: number }> =
  {
    "m-pottery": {
      kind: "event",
      text: "Ana takes pottery classes at the studio on Elm Street.",
      sources: ["D1:1", "D1:3"],
      validFrom: "2023-05-01T00:00:00.000Z",
      session: 1,
    },
    "m-move": {
      kind: "event",
      text: "Ana moved to Lisbon.",
      sources: ["D2:1"],
      validFrom: "2023-05-19T00:00:00.000Z",
      session: 2,
    },
    "m-job": {
      kind: "fact",
      text: "Ana has a new job at the museum.",
      sources: ["D2:3"],
      validFrom: "2023-05-20T10:00:02.000Z",
      session: 2,
    },
  };
/**
 * Each question's ranked hits (turns by dia id, memories by id, "memory+turn" a memory with its source turn folded
 * into its result), as search without a kinds filter answers.
 */
const SEARCH: Record<string, string[]> = {
  [POTTERY]: ["m-pottery+D1:1", "D1:2"],
  [MOVE]: ["m-move", "D2:2", "D2:3"],
  [BEAGLE]: ["D1:4"],
};
/** Each question's context (memory_context_build), its total tokens and its latency. */
const CONTEXT: Record<string, { refs: string[]; tokens: number; ms: number }> = {
  [POTTERY]: { refs: ["m-pottery", "D1:3"], tokens: 40, ms: 5 },
  [MOVE]: { refs: ["m-move"], tokens: 20, ms: 9 },
  [BEAGLE]: { refs: ["D1:2"], tokens: 10, ms: 7 },
};
/** The windows extraction recorded, per session. */
const WINDOWS = [
  { id: "w1", session: 1, tokens_in: 400, tokens_out: 60, latency_ms: 100 },
  { id: "w2", session: 2, tokens_in: 500, tokens_out: 90, latency_ms: 300 },
];

/**
 * The server's tools over an in-memory model of the data: memory_ingest stores turns; memory_history shows nothing
 * on its first round (extraction still running), then the windows' decisions; search and memory_context_build
 * answer the scripts above, search honouring `kinds`.
 */
function fakeServer() {
  const ingested: { id: string; conversationId: string; args: Record<string, unknown> }[] = [];
  const conversations: string[] = [];
  let historyCalls = 0;
  const dias = Object.values(SAMPLE.conversation).flatMap((v) =>
    Array.isArray(v) ? (v as { dia_id: string; text: string }[]) : [],
  );
  const idOf = (dia: string) => {
    const text = dias.find((t) => t.dia_id === dia)!.text;
    return ingested.find((m) => String(m.args.content).startsWith(text))!.id;
  };
  const hit = (ref: string): Record<string, unknown> => {
    const [own, folded] = ref.split("+") as [string, string | undefined];
    if (folded) return { ...hit(own), folded_sources: [hit(folded)] };
    const memory = MEMORIES[ref];
    if (!memory) {
      const id = idOf(ref);
      return { item_id: id, id, kind: "message", content: ingested.find((m) => m.id === id)!.args.content };
    }
    return {
      item_id: ref,
      id: ref,
      kind: "memory",
      content: memory.text,
      derived: true,
      memory_kind: memory.kind,
      subject: "Ana",
      valid_from: memory.validFrom,
      valid_to: null,
      sources: memory.sources.map(idOf),
    };
  };
  const tools: Record<string, (args: any) => unknown> = {
    memory_ingest: (args) => {
      conversations.push(args.conversation_id);
      const ids = args.messages.map((message: Record<string, unknown>) => {
        const id = `item-${ingested.length + 1}`;
        ingested.push({ id, conversationId: args.conversation_id, args: message });
        return id;
      });
      return { conversation_id: args.conversation_id, project_id: args.project_id, ids, extraction: "queued" };
    },
    memory_history: (args) => {
      historyCalls++;
      if (historyCalls <= conversations.length) return { events: [] };
      const session = conversations.indexOf(args.conversation_id) + 1;
      const window = WINDOWS.find((w) => w.session === session)!;
      const event = (event: string, memoryId: string | null) => ({
        event,
        memory_id: memoryId,
        window: window.id,
        model: "fake-model",
        tokens_in: window.tokens_in,
        tokens_out: window.tokens_out,
        neurons: 0,
        latency_ms: window.latency_ms,
      });
      const added = Object.entries(MEMORIES).filter(([, m]) => m.session === session);
      return {
        events: [...added.map(([id]) => event("added", id)), ...(session === 2 ? [event("dropped", null)] : [])],
      };
    },
    memory_list: (args) => {
      expect(args.kinds).toEqual(["memory"]);
      // A listing shows a preview of each text (the pottery memory's cut short, so that it is read whole).
      const memories = Object.keys(MEMORIES).map((ref) => {
        const { content, ...rest } = hit(ref);
        return ref === "m-pottery"
          ? { ...rest, preview: String(content).slice(0, 20), truncated: true }
          : { ...rest, preview: content, truncated: false };
      });
      return { memories: memories.slice(args.offset, args.offset + args.limit), total: memories.length };
    },
    search: (args) => {
      expect(args).toMatchObject({ project: "conv-test", limit: 10 });
      // A memory the kinds leave out folds nothing: its turn is a result of its own.
      const results = SEARCH[args.query]!.flatMap((ref) => {
        const [own, folded] = ref.split("+") as [string, string | undefined];
        if (!args.kinds || args.kinds.includes(hit(own).kind)) return [hit(ref)];
        return folded ? [hit(folded)] : [];
      });
      return { results, total: results.length, query: args.query };
    },
    memory_get: (args) => hit(args.id),
    memory_context_build: (args) => {
      expect(args).toMatchObject({ token_budget: 2000, min_similarity: 0, use_cache: false, namespace: "conv-test" });
      const { refs, tokens } = CONTEXT[args.query]!;
      const memories = refs.map(hit);
      return { memories, total_tokens: tokens, memory_count: memories.length };
    },
  };
  const call = async (name: string, args: Record<string, unknown>) => ({
    result: tools[name]!(args) as any,
    ms: name === "memory_context_build" ? CONTEXT[args.query as string]!.ms : 1,
  });
  return { call, ingested };
}

// memory_history's fallback wait: every conversation with an event, then quiet for quietMs.
const FAST_WAIT = { pollMs: 2, quietMs: 10 };

describe("extraction bench suite", () => {
  it("ingests a session a call and compares R@10 of turns alone with turns and derived memories", async () => {
    const server = fakeServer();
    const { figures, lines } = await measureExtraction({ call: server.call, samples: [SAMPLE], wait: FAST_WAIT });

    expect(server.ingested).toHaveLength(8);
    expect(new Set(server.ingested.map((m) => m.conversationId))).toEqual(
      new Set(["conv-test:session_1", "conv-test:session_2"]),
    );
    expect(server.ingested[3]!.args).toEqual({
      role: "assistant",
      speaker: "Ben",
      content: "I adopted a beagle named Max. [shares a photo: a beagle on a sofa]",
      timestamp: Date.parse("2023-05-08T13:56:03Z"),
    });
    expect(server.ingested[4]!.args).toMatchObject({ role: "user", timestamp: Date.parse("2023-05-20T10:00:00Z") });

    // Pottery: turns alone find D1:1 of D1:1 and D1:3, the memory sourced to both finds both (D1:1 folded into its
    // result). Move: only the memory sourced to D2:1 finds it. The adversarial question is reported apart.
    expect(figures.recall["4"]).toEqual({ n: 1, turns: 0.5, derived: 1 });
    expect(figures.recall["2"]).toEqual({ n: 1, turns: 0, derived: 1 });
    expect(figures.recall.all).toEqual({ n: 2, turns: 0.25, derived: 1 });
    expect(figures.recall["5"]).toEqual({ n: 1, turns: 1, derived: 1 });
    expect(figures.recall["1"].n).toBe(0);
    expect(figures.derivedShare).toBeCloseTo(2 / 6);
    // D1:3 and D2:1 come only through a memory; D1:1 ranked itself, folded into the pottery memory's result.
    expect(figures.onlyThroughDerived).toBe(0.5);

    expect(figures.memoriesByKind).toEqual({ event: 2, fact: 1 });
    expect(figures.events).toEqual({ added: 3, duplicate: 0, superseded: 0, failed: 0, dropped: 1, deferred: 0 });
    expect(figures.waited).toMatchObject({ unread: 0, exact: false, timedOut: false });
    expect(figures.cost).toMatchObject({
      windows: 2,
      calls: null,
      models: ["fake-model"],
      tokensInPerTurn: 900 / 8,
      tokensOutPerTurn: 150 / 8,
      neuronsPerTurn: 0,
      latencyP50: 100,
      latencyP95: 300,
    });
    expect(lines).toContain("    4 single-hop   n=   1   50.0 / 100.0  (+50.0)");
    expect(lines).toContain("    all 1-4        n=   2   25.0 / 100.0  (+75.0)");
  });

  it("with the oracle model, prints what it served and what the server kept of it", async () => {
    const server = fakeServer();
    const oracle = createOracle([SAMPLE], { cut: 1 });
    for (const session of [1, 2] as const) {
      expect(oracle.answer(promptOf(session, 0, 4, 0)).finishReason).toBe("length");
      expect(oracle.answer(promptOf(session, 0, 4, 0)).finishReason).toBe("stop");
    }
    const { figures, lines } = await measureExtraction({
      call: server.call,
      samples: [SAMPLE],
      wait: FAST_WAIT,
      oracle,
    });
    // The fake's memories are pottery, the move and the job: Ben's two observations were not kept.
    expect(figures.oracle).toEqual({
      served: 5,
      kept: 3,
      slipped: 0,
      recovered: 0,
      bySlip: {},
      bySyntax: {},
      cut: 5,
      cutKept: 3,
      observations: 5,
      requests: 4,
      cutAnswers: 2,
      wrappedAnswers: 0,
      syntaxAnswers: {},
      unmatchedTurns: 0,
    });
    expect(lines).toContain("  oracle: 4 requests; observations served 5 of 5 in the data, kept 3 of 5 (60.0 %)");
    expect(lines).toContain(
      "  oracle slips: slipped 0, recovered 0 of 0; answers cut 2, their observations kept 3 of 5 (60.0 %); answers wrapped in prose 0",
    );
  });

  it("waits on the exact extraction record when there is one, and takes its windows' calls", async () => {
    const server = fakeServer();
    let polls = 0;
    const window = { model: "fake-model", neurons: 2, tokensIn: 100, tokensOut: 10 };
    const progress = async () => ({
      conversations: 2,
      unread: ++polls < 3 ? 1 : 0,
      windows: [
        { id: "w1", status: "done", calls: 1, latencyMs: 40, ...window },
        { id: "w2", status: "failed", calls: 2, latencyMs: 90, ...window },
      ],
    });
    const { figures } = await measureExtraction({ call: server.call, samples: [SAMPLE], progress, wait: FAST_WAIT });
    expect(polls).toBe(4); // three until nothing is unread, one for the windows
    expect(figures.waited).toMatchObject({ unread: 0, exact: true });
    expect(figures.cost).toMatchObject({ windows: 2, failedWindows: 1, calls: 3, neuronsPerTurn: 0.5 });
  });
});

/**
 * A session's turns as the extraction prompt shows them (src/core/extraction/contract.ts, with a role after the
 * speaker), `extract` from the turn at that index on, the turns before it as context, and whatever other sections a
 * prompt may grow after them.
 */
function promptOf(session: 1 | 2, from: number, to: number, extract: number): string {
  const turns = SAMPLE.conversation[`session_${session}`] as { speaker: string; text: string; blip_caption?: string }[];
  const start = Date.parse(session === 1 ? "2023-05-08T13:56:00Z" : "2023-05-20T10:00:00Z");
  const line = (i: number) => {
    const t = turns[i]!;
    const text = t.blip_caption ? `${t.text} [shares a photo: ${t.blip_caption}]` : t.text;
    const role = t.speaker === "Ana" ? "user" : "assistant";
    return `[T${i - from + 1}] ${new Date(start + i * 1000).toISOString()} ${t.speaker} (${role}): ${text}`;
  };
  const range = (a: number, b: number) => Array.from({ length: b - a }, (_, k) => line(a + k));
  return [
    ...(extract > from ? ["Earlier turns (context only):", ...range(from, extract), ""] : []),
    "Turns to extract from:",
    ...range(extract, to),
    "",
    "Keys already in use (reuse one when a memory updates it):",
    "- Ana: home_city",
  ].join("\n");
}

describe("oracle extraction model", () => {
  it("reads the prompt's turns leniently: refs, instants, speakers without their role, which to extract from", () => {
    const turns = parseOracleTurns(`${promptOf(1, 0, 4, 2)}\n\nYour previous answer was refused: no. Answer again.`);
    expect(turns.map((t) => [t.ref, t.speaker, t.extract])).toEqual([
      ["T1", "Ana", false],
      ["T2", "Ben", false],
      ["T3", "Ana", true],
      ["T4", "Ben", true],
    ]);
    expect(turns[3]).toMatchObject({
      at: Date.parse("2023-05-08T13:56:03Z"),
      text: "I adopted a beagle named Max. [shares a photo: a beagle on a sofa]",
    });
  });

  it("answers the observations whose last turn it extracts from, sourced to every cited turn the prompt shows", () => {
    const oracle = createOracle([SAMPLE]);
    // Pottery cites D1:1 (context here) and D1:3; Ben's beagle D1:4.
    const first = oracle.answer(promptOf(1, 0, 4, 2));
    expect(first.finishReason).toBe("stop");
    expect(JSON.parse(first.content)).toEqual({
      memories: [
        {
          type: "fact",
          subject: "Ana",
          key: null,
          text: "Ana takes pottery classes at the studio on Elm Street.",
          when: null,
          sources: ["T1", "T3"],
        },
        {
          type: "fact",
          subject: "Ben",
          key: null,
          text: "Ben adopted a beagle named Max.",
          when: null,
          sources: ["T4"],
        },
      ],
    });
    // A window that stops before Ben's last cited turn (D2:4) does not answer his observation yet.
    const early = JSON.parse(oracle.answer(promptOf(2, 0, 3, 0)).content).memories;
    expect(early.map((m: { text: string }) => m.text)).toEqual([
      "Ana moved to Lisbon.",
      "Ana has a new job at the museum.",
    ]);
    const late = JSON.parse(oracle.answer(promptOf(2, 1, 4, 3)).content).memories;
    expect(late).toEqual([expect.objectContaining({ subject: "Ben", sources: ["T1", "T3"] })]);
    expect(oracle.served().map((o) => [o.text, o.sourceDias])).toEqual([
      ["Ana takes pottery classes at the studio on Elm Street.", ["D1:1", "D1:3"]],
      ["Ben adopted a beagle named Max.", ["D1:4"]],
      ["Ana moved to Lisbon.", ["D2:1"]],
      ["Ana has a new job at the museum.", ["D2:3"]],
      ["Ben congratulated Ana and says Max says hi.", ["D2:2", "D2:4"]],
    ]);
    expect(oracle.observationCount).toBe(5);
    expect(oracle.record).toEqual({
      requests: 3,
      unmatchedTurns: 0,
      cutAnswers: 0,
      wrappedAnswers: 0,
      syntaxAnswers: {},
    });
  });

  it("slips and cuts as told, the same way on every run; a cut is the window's first answer only", () => {
    const run = () => {
      const oracle = createOracle([SAMPLE], { slips: 1, cut: 1 });
      const answers = [1, 2].flatMap((n) => [
        oracle.answer(promptOf(n as 1 | 2, 0, 4, 0)),
        oracle.answer(promptOf(n as 1 | 2, 0, 4, 0)),
      ]);
      return { answers, served: oracle.served(), record: oracle.record };
    };
    const { answers, served, record } = run();
    expect(answers.map((a) => a.finishReason)).toEqual(["length", "stop", "length", "stop"]);
    expect(() => JSON.parse(answers[0]!.content)).toThrow();
    const memories = [answers[1]!, answers[3]!].flatMap((a) => JSON.parse(a.content).memories);
    // Every memory differs from what the oracle answers without slips (a ref off by one only in its ref).
    const unslipped = createOracle([SAMPLE]);
    const truth = [1, 2].flatMap((n) => JSON.parse(unslipped.answer(promptOf(n as 1 | 2, 0, 4, 0)).content).memories);
    expect(memories).toHaveLength(truth.length);
    memories.forEach((m, i) => expect(m).not.toEqual(truth[i]));
    expect(served.every((o) => o.slip !== null && o.cut)).toBe(true);
    expect(record.cutAnswers).toBe(2);
    expect(run().answers).toEqual(answers);
    // A share below 1 slips some memories, not all, and whichever it slips it slips again.
    const some = createOracle([SAMPLE], { slips: 0.5, seed: "another" });
    some.answer(promptOf(2, 0, 4, 0));
    const again = createOracle([SAMPLE], { slips: 0.5, seed: "another" });
    again.answer(promptOf(2, 0, 4, 0));
    expect(again.served().map((o) => o.slip)).toEqual(some.served().map((o) => o.slip));
    // Wrapped answers carry the same JSON inside prose and a fence.
    const wrapped = createOracle([SAMPLE], { wrap: 1 });
    const plain = createOracle([SAMPLE]);
    const inside = wrapped.answer(promptOf(2, 0, 4, 0)).content;
    expect(inside).toMatch(/^Here are the memories I found:\n```json\n\{.*\}\n```\nAnything else\?$/s);
    expect(inside).toContain(plain.answer(promptOf(2, 0, 4, 0)).content);
    expect(wrapped.record.wrappedAnswers).toBe(1);
    // An answer in another syntax holds the same memories, written by one of the writers.
    const written = createOracle([SAMPLE], { syntax: 1 });
    written.answer(promptOf(2, 0, 4, 0));
    const [writer, count] = Object.entries(written.record.syntaxAnswers)[0]!;
    expect(count).toBe(1);
    expect(written.served().every((o) => o.syntax === writer)).toBe(true);
  });

  it("counts a served observation kept when a derived memory has its text, or nearly, and all its turns", () => {
    const oracle = createOracle([SAMPLE], { slips: 1 });
    oracle.answer(promptOf(1, 0, 4, 0));
    oracle.answer(promptOf(2, 0, 4, 0));
    const turns = new Map<string, StoredTurn>(
      ["D1:1", "D1:3", "D1:4", "D2:1", "D2:3"].map((dia) => [
        `id-${dia}`,
        { dia, speaker: "", at: 0, project: "conv-test" },
      ]),
    );
    const memory = (content: string, dias: string[], project = "conv-test") => ({
      project,
      content,
      sources: dias.map((d) => `id-${d}`),
    });
    const figures = keptObservations(
      oracle.served(),
      [
        memory("Ana takes pottery classes at the studio on Elm Street.", ["D1:1", "D1:3"]),
        memory("Ben adopted a beagle named Max", ["D1:4"]), // the stop left out: nearly the same text
        memory("Ana moved to Lisbon.", ["D2:3"]), // not its turn
        memory("Ana has a new job at the museum.", ["D2:3"], "other-project"),
      ],
      turns,
    );
    expect(figures).toMatchObject({ served: 5, kept: 2, slipped: 5, recovered: 2 });
  });
});

describe("evidence credited to a result", () => {
  const turns = new Map<string, StoredTurn>(
    [
      ["t1", "D1:1", 3],
      ["t2", "D1:2", 1],
      ["t3", "D1:3", 2],
      ["t4", "D1:4", 4],
    ].map(([id, dia, at]) => [id as string, { dia: dia as string, speaker: "", at: at as number, project: "p" }]),
  );

  it("credits a derived memory with its two earliest sources only, and a turn with itself", () => {
    const memory = { item_id: "m", derived: true, sources: ["t1", "t2", "t3", "t4"] };
    expect(coveredTurns([memory], turns)).toEqual(new Set(["D1:2", "D1:3"]));
    expect(coveredTurns([{ item_id: "t4" }, { item_id: "t1", sources: ["t2"] }], turns)).toEqual(
      new Set(["D1:4", "D1:1"]),
    );
  });

  it("credits the source turns search folded into a memory's result, which ranked on their own", () => {
    const memory = {
      item_id: "m",
      derived: true,
      sources: ["t1", "t2", "t3", "t4"],
      folded_sources: [{ item_id: "t4" }],
    };
    expect(coveredTurns([memory], turns)).toEqual(new Set(["D1:2", "D1:3", "D1:4"]));
  });
});

describe("qa bench suite", () => {
  const dir = mkdtempSync(join(tmpdir(), "bench-qa-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("answers from memory_context_build, judges leniently and strictly, and counts abstentions", async () => {
    const server = fakeServer();
    const contexts = new Map<string, string>();
    const ANSWERS: Record<string, string> = {
      [POTTERY]: "At the Elm Street studio", // token F1 0.75 against the gold answer
      [MOVE]: "She moved on the 19th of May", // F1 0.22: the strict judge says no, the lenient one yes
      [BEAGLE]: "Not mentioned in the conversations.",
    };
    const judged: string[] = [];
    const outFile = join(dir, "out", "qa-answers.jsonl");
    const { figures, lines, rows } = await measureQa({
      call: server.call,
      samples: [SAMPLE],
      answer: async ({ question, context }) => (contexts.set(question, context), ANSWERS[question]!),
      judge: async ({ question, gold }) => (judged.push(`${question} | ${gold}`), true),
      outFile,
      wait: FAST_WAIT,
    });

    expect(contexts.get(POTTERY)).toBe(
      "- [1 May 2023] Ana takes pottery classes at the studio on Elm Street.\n" +
        "- [8 May 2023] Ana: At the studio on Elm Street, every Tuesday.",
    );
    expect(contexts.get(BEAGLE)).toBe("- [8 May 2023] Ben: Nice! Where are they?");
    // The adversarial question has no gold answer: only abstention scores it.
    expect(judged).toEqual([`${POTTERY} | the studio on Elm Street`, `${MOVE} | 19 May 2023`]);

    expect(figures.accuracy["4"]).toEqual({ n: 1, lenient: 1, strict: 1 });
    expect(figures.accuracy["2"]).toEqual({ n: 1, lenient: 1, strict: 0 });
    expect(figures.accuracy.all).toEqual({ n: 2, lenient: 1, strict: 0.5 });
    expect(figures.adversarial).toEqual({ n: 1, abstained: 1 });
    expect(figures.abstainedOnScored).toBe(0);
    expect(figures.contextTokens).toBeCloseTo(70 / 3);
    expect(figures.contextDerived).toBeCloseTo(2 / 3);
    expect(figures.evidenceInContext).toBe(1);
    expect([figures.retrievalP50, figures.retrievalP95]).toEqual([7, 9]);
    expect(lines).toContain("    all 1-4             2     100.0     50.0");

    const written = readFileSync(outFile, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(written).toEqual(rows);
    expect(written).toHaveLength(3);
    expect(written[1]).toMatchObject({
      question: MOVE,
      gold: "19 May 2023",
      answer: ANSWERS[MOVE],
      lenient: true,
      strict: false,
      f1: 0.222,
      context_ids: ["m-move"],
    });
    expect(written[2]).toMatchObject({ category: 5, gold: null, lenient: null, strict: null, abstained: true });
  });
});
