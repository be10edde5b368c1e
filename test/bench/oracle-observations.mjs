// An oracle extraction model for the extraction bench: LoCoMo's own observations (sample.observation, one sentence
// per fact, written by the data set's authors with the turns they come from) served as a perfect extractor's answer.
// Pure: the samples come as an argument (test/node/bench-extraction.test.ts runs it on made-up data), and
// oracle-server.mjs serves it over HTTP. For each prompt it finds the window's turns among the stored ones (the bench
// stores turn i of a session at the session's date + i seconds, conversation-ingest.mjs) and answers every
// observation whose last turn is among the turns to extract from, sourced to the refs of its turns in the prompt.
// Optional slips and cuts, decided by a seeded hash so that runs compare, test how the server takes a sloppy model.
import { SYNTAX_SLIPS } from "./answer-syntax.mjs";
import { contentOf, sessionsOf } from "./conversation-ingest.mjs";

/** A prompt line: `[T3] 2023-05-08T13:56:00.000Z Caroline: text`; the speaker may carry a role, `Caroline (user)`. */
const TURN_LINE = /^\[(T\d+)\] (\S+) (.+?): (.*)$/;
const EXTRACT_HEADER = /^Turns to extract from\b/i;

/**
 * The ways a memory may slip, one each: a kind in the wrong case, an empty date, a ref in brackets, an empty key, a
 * plural kind ("facts"), refs as numbers, the text under `content`, and a ref off by one (the turn before the one it
 * comes from, or after it for the prompt's first turn).
 */
export const SLIPS = ["type", "when", "ref", "key", "plural", "number", "field", "neighbour"];

/** The ref next to `ref` ("T3" -> "T2"; "T1" -> "T2") in a prompt of `count` turns. */
function neighbourOf(ref, count) {
  const n = Number(ref.slice(1));
  return `T${n > 1 ? n - 1 : Math.min(n + 1, count)}`;
}

/**
 * The prompt's turns: `{ref, at, speaker, text, extract}`, `extract` for the lines under "Turns to extract from:".
 * Lenient about the rest of the prompt: any other line that is not a turn (another section's header, known keys, a
 * retry's note) ends that section, and is skipped.
 */
export function parseOracleTurns(prompt) {
  const turns = [];
  let extract = false;
  for (const line of prompt.split("\n")) {
    const match = TURN_LINE.exec(line);
    if (!match) {
      if (line.trim() !== "") extract = EXTRACT_HEADER.test(line);
      continue;
    }
    const at = Date.parse(match[2]);
    if (Number.isNaN(at)) continue;
    turns.push({ ref: match[1], at, speaker: match[3].replace(/ \([^()]*\)$/, ""), text: match[4], extract });
  }
  return turns;
}

/** The dia ids an observation cites: a string, a list, or several in one string ("D1:3; D1:5", "D1:3,D1:5"). */
export function diaIdsOf(cited) {
  return [...new Set(String([cited].flat(Infinity).join(" ")).match(/D\d+:\d+/g) ?? [])];
}

const folded = (text) => text.replace(/\s*[\r\n]+\s*/g, " ").trim();

/** FNV-1a over a string, then a uniform share in [0, 1): the same seed and key always give the same share. */
export function seededShare(seed, key) {
  let h = 0x811c9dc5;
  for (const ch of `${seed}\u0000${key}`) {
    h ^= ch.codePointAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return (h >>> 0) / 2 ** 32;
}

/**
 * The oracle over `samples` (LoCoMo's shape, with `observation`). `slips`: the share of memories given one slip each
 * (the same slip every time that memory is answered, retries included); `cut`: the share of windows whose first
 * answer is cut short mid-JSON (finish_reason "length"; the retry gets the whole answer); `wrap`: the share of
 * windows whose answers come inside prose and a Markdown fence (every answer of the window); `syntax`: the share of
 * windows whose answers are written in another syntax or shape (answer-syntax.mjs, one writer a window). Returns
 * `answer(prompt)` and the record of what was served.
 */
export function createOracle(samples, { slips = 0, cut = 0, wrap = 0, syntax = 0, seed = "locomo-oracle" } = {}) {
  const turnsAt = new Map();
  const observationsByLastTurn = new Map();
  let observationCount = 0;
  for (const sample of samples) {
    const diaOrder = new Map();
    for (const [n, session] of sessionsOf(sample).entries()) {
      session.turns.forEach((turn, i) => {
        const at = session.at + i * 1000;
        const entry = { sample: sample.sample_id, session: n + 1, dia: turn.dia_id, text: folded(contentOf(turn)) };
        turnsAt.set(at, [...(turnsAt.get(at) ?? []), entry]);
        diaOrder.set(turn.dia_id, diaOrder.size);
      });
    }
    for (const [sessionKey, bySpeaker] of Object.entries(sample.observation ?? {}))
      for (const [speaker, list] of Object.entries(bySpeaker ?? {}))
        (list ?? []).forEach(([text, cited], index) => {
          const dias = diaIdsOf(cited).filter((d) => diaOrder.has(d));
          observationCount++;
          if (dias.length === 0 || typeof text !== "string" || text.trim() === "") return;
          const last = dias.reduce((a, b) => (diaOrder.get(b) > diaOrder.get(a) ? b : a));
          const observation = {
            id: `${sample.sample_id}/${sessionKey}/${speaker}/${index}`,
            sample: sample.sample_id,
            speaker,
            text: text.trim(),
            dias,
          };
          const key = `${sample.sample_id}/${last}`;
          observationsByLastTurn.set(key, [...(observationsByLastTurn.get(key) ?? []), observation]);
        });
  }

  const served = new Map();
  const answeredWindows = new Set();
  const record = { requests: 0, unmatchedTurns: 0, cutAnswers: 0, wrappedAnswers: 0, syntaxAnswers: {} };

  /** The stored turn a prompt line shows: same instant and text, in the sample the other lines agree on. */
  const locate = (turns) => {
    const candidates = turns.map((t) => (turnsAt.get(t.at) ?? []).filter((e) => e.text === folded(t.text)));
    const votes = new Map();
    for (const list of candidates)
      for (const key of new Set(list.map((e) => `${e.sample}#${e.session}`))) votes.set(key, (votes.get(key) ?? 0) + 1);
    const best = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0];
    return candidates.map((list) => list.find((e) => `${e.sample}#${e.session}` === best) ?? null);
  };

  const slipOf = (observation) => {
    if (slips <= 0 || seededShare(seed, `slip:${observation.id}`) >= slips) return null;
    return SLIPS[Math.floor(seededShare(seed, `kind:${observation.id}`) * SLIPS.length)];
  };

  function answer(prompt) {
    record.requests++;
    const turns = parseOracleTurns(prompt);
    const located = locate(turns);
    const refOf = new Map();
    const diaOfRef = new Map();
    turns.forEach((t, i) => {
      const e = located[i];
      if (!e) return void record.unmatchedTurns++;
      refOf.set(`${e.sample}/${e.dia}`, t.ref);
      diaOfRef.set(t.ref, e.dia);
    });
    // A window is known by its turns to extract from, whichever job asks: its first answer is the one that may be cut.
    const windowId = turns
      .filter((t) => t.extract)
      .map((t) => `${t.at} ${t.text}`)
      .join("\n");
    const writers = Object.keys(SYNTAX_SLIPS);
    const writer =
      syntax > 0 && seededShare(seed, `syntax:${windowId}`) < syntax
        ? writers[Math.floor(seededShare(seed, `writer:${windowId}`) * writers.length)]
        : null;
    if (writer) record.syntaxAnswers[writer] = (record.syntaxAnswers[writer] ?? 0) + 1;
    const memories = [];
    const answered = [];
    turns.forEach((t, i) => {
      if (!t.extract || !located[i]) return;
      for (const observation of observationsByLastTurn.get(`${located[i].sample}/${located[i].dia}`) ?? []) {
        const sources = observation.dias.flatMap((d) => refOf.get(`${observation.sample}/${d}`) ?? []);
        const slip = slipOf(observation);
        const memory = {
          type: "fact",
          subject: observation.speaker,
          key: null,
          text: observation.text,
          when: null,
          sources,
        };
        if (slip === "type") memory.type = "Fact";
        if (slip === "when") memory.when = "";
        if (slip === "key") memory.key = "";
        if (slip === "ref") memory.sources = [`[${sources[0]}]`, ...sources.slice(1)];
        if (slip === "plural") memory.type = "facts";
        if (slip === "number") memory.sources = sources.map((ref) => Number(ref.slice(1)));
        if (slip === "neighbour") memory.sources = sources.map((ref) => neighbourOf(ref, turns.length));
        if (slip === "field") {
          memory.content = memory.text;
          delete memory.text;
        }
        memories.push(memory);
        const before = served.get(observation.id);
        const entry = {
          ...observation,
          sourceDias: sources.map((ref) => diaOfRef.get(ref)),
          slip,
          syntax: writer,
          cut: before?.cut ?? false,
        };
        served.set(observation.id, entry);
        answered.push(entry);
      }
    });
    const json = writer ? SYNTAX_SLIPS[writer](memories) : JSON.stringify({ memories });
    const wrapped = wrap > 0 && seededShare(seed, `wrap:${windowId}`) < wrap;
    if (wrapped) record.wrappedAnswers++;
    const content = wrapped ? `Here are the memories I found:\n\`\`\`json\n${json}\n\`\`\`\nAnything else?` : json;
    const first = !answeredWindows.has(windowId);
    answeredWindows.add(windowId);
    if (first && cut > 0 && seededShare(seed, `cut:${windowId}`) < cut) {
      record.cutAnswers++;
      for (const entry of answered) entry.cut = true;
      return { content: content.slice(0, Math.floor(content.length / 2)), finishReason: "length" };
    }
    return { content, finishReason: "stop" };
  }

  return {
    answer,
    /** Every observation served at least once: {id, sample, speaker, text, dias, sourceDias, slip, cut}. */
    served: () => [...served.values()],
    observationCount,
    record,
  };
}

/** Words of a text, lowercased, for comparing an observation with the memory it became. */
const wordsOf = (text) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

/** Same words, or nearly (Jaccard ≥ 0.8 over lowercased words): consolidation may keep a near duplicate's wording. */
export function nearlySameText(a, b) {
  const x = wordsOf(a);
  const y = wordsOf(b);
  let shared = 0;
  for (const w of x) if (y.has(w)) shared++;
  const union = x.size + y.size - shared;
  return union === 0 || shared / union >= 0.8;
}

/**
 * Which served observations the server kept: a current derived memory of the observation's project has its text
 * (or a nearly identical one) and every turn it was served with among its sources. `memories`: {project, content,
 * sources (item ids)}; `turns`: item id -> {dia, project} (conversation-ingest.mjs). Returns the figures the bench
 * prints: served, kept, slipped, recovered (slipped and kept), per slip kind, and those first served in an answer
 * that was cut (cut) and kept all the same (cutKept).
 */
export function keptObservations(served, memories, turns) {
  const byProject = new Map();
  for (const m of memories) {
    const dias = new Set(m.sources.flatMap((id) => (turns.has(id) ? [turns.get(id).dia] : [])));
    byProject.set(m.project, [...(byProject.get(m.project) ?? []), { content: m.content, dias }]);
  }
  const kept = (o) =>
    (byProject.get(o.sample) ?? []).some(
      (m) => o.sourceDias.every((d) => m.dias.has(d)) && nearlySameText(m.content, o.text),
    );
  const figures = {
    served: served.length,
    kept: 0,
    slipped: 0,
    recovered: 0,
    bySlip: {},
    bySyntax: {},
    cut: 0,
    cutKept: 0,
  };
  for (const o of served) {
    const isKept = kept(o);
    if (isKept) figures.kept++;
    if (o.syntax) {
      const written = (figures.bySyntax[o.syntax] ??= { served: 0, kept: 0 });
      written.served++;
      if (isKept) written.kept++;
    }
    if (o.cut) {
      figures.cut++;
      if (isKept) figures.cutKept++;
    }
    if (!o.slip) continue;
    figures.slipped++;
    const slip = (figures.bySlip[o.slip] ??= { slipped: 0, recovered: 0 });
    slip.slipped++;
    if (isKept) {
      figures.recovered++;
      slip.recovered++;
    }
  }
  return figures;
}
