import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type LocomoSample, measureExtraction } from "../bench/extraction.mjs";
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
/** Each question's ranked hits (turns by dia id, memories by id), as search without a kinds filter answers. */
const SEARCH: Record<string, string[]> = {
  [POTTERY]: ["D1:1", "m-pottery", "D1:2"],
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
  const hit = (ref: string) => {
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
      const memories = Object.keys(MEMORIES).map(hit);
      return { memories: memories.slice(args.offset, args.offset + args.limit), total: memories.length };
    },
    search: (args) => {
      expect(args).toMatchObject({ project: "conv-test", limit: 10 });
      const results = SEARCH[args.query]!.map(hit).filter((r) => !args.kinds || args.kinds.includes(r.kind));
      return { results, total: results.length, query: args.query };
    },
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

    // Pottery: turns alone find D1:1 of D1:1 and D1:3, the memory sourced to both finds both. Move: only the memory
    // sourced to D2:1 finds it. The adversarial question is reported apart.
    expect(figures.recall["4"]).toEqual({ n: 1, turns: 0.5, derived: 1 });
    expect(figures.recall["2"]).toEqual({ n: 1, turns: 0, derived: 1 });
    expect(figures.recall.all).toEqual({ n: 2, turns: 0.25, derived: 1 });
    expect(figures.recall["5"]).toEqual({ n: 1, turns: 1, derived: 1 });
    expect(figures.recall["1"].n).toBe(0);
    expect(figures.derivedShare).toBeCloseTo(2 / 7);
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
