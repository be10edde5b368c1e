import type { WhenPrecision } from "../memory/item-types";
import { findMemories } from "./answer-json";
import {
  KEY_MAX_CHARS,
  MEMORIES_PER_WINDOW,
  MEMORY_KINDS,
  MEMORY_TEXT_MAX_CHARS,
  type MemoryKind,
  SUBJECT_MAX_CHARS,
} from "./contract";
import { groundedSources } from "./grounding";
import { salvageMemories } from "./salvage";
import type { Turn, Window } from "./windows";

/** A memory the answer gave, checked against the contract, its refs resolved to the window's turns. */
export interface ValidMemory {
  kind: MemoryKind;
  subject: string;
  /** snake_case, or null. */
  key: string | null;
  text: string;
  /** The start of the memory's `when` (00:00 UTC of its day, month or year, epoch ms), or null. */
  when: number | null;
  /** How much of `when` was given; null without one. */
  whenPrecision: WhenPrecision | null;
  sources: Turn[];
  /** Slips read leniently ("type 'Fact' read as fact"), for the decision's reason. */
  mended: string[];
}

/** What one answer gave: its memories, and what was dropped from it, each with its reason. */
export interface ReadAnswer {
  memories: ValidMemory[];
  dropped: string[];
}

/** An answer that cannot be read at all (not JSON, no `memories`); its message goes back to the model. */
export class AnswerError extends Error {}

/**
 * The answer's memories, read one by one: a memory that breaks the contract is dropped with its reason and the
 * others are kept; plain slips are mended (a type in any case or plural, `when` of "" or "null", a partial date or
 * one in words, a ref written "[T3]", "t3" or 3, refs in one string, a key of "", a field under a near name). The
 * JSON is found where models put it (answer-json.ts). Only an answer with no `memories` list is refused whole. A
 * `cut` answer (the model ran out of output) keeps the memories that came whole before the cut.
 */
export function readAnswer(content: unknown, window: Window, cut = false): ReadAnswer {
  if (cut && typeof content === "string") {
    const salvaged = salvageMemories(content);
    const read = readList(salvaged.memories, window);
    if (salvaged.lost)
      read.dropped.push(`the answer was cut after ${salvaged.memories.length} whole memories: the rest dropped`);
    return read;
  }
  const found = findMemories(content);
  if (found === null) throw new AnswerError(refusal(content));
  const read = readList(found.list, window);
  for (const memory of read.memories) memory.mended.unshift(...found.mended);
  return read;
}

/** Why an answer with no `memories` list is refused, as the model is told when asked again. */
function refusal(content: unknown): string {
  if (typeof content === "string") {
    try {
      JSON.parse(content);
    } catch (error) {
      return `The answer is not valid JSON (${(error as Error).message}).`;
    }
  }
  return 'The answer must be a JSON object with "memories", an array: {"memories": [...]}.';
}

function readList(list: readonly unknown[], window: Window): ReadAnswer {
  const memories: ValidMemory[] = [];
  const dropped: string[] = [];
  list.forEach((raw, i) => {
    const at = `memories[${i}]`;
    let memory: ReturnType<typeof checkMemory>;
    try {
      memory = checkMemory(raw, at, dropped);
    } catch (error) {
      if (!(error instanceof MemoryProblem)) throw error;
      dropped.push(`${at} ${describe(raw)}: ${error.message}: memory dropped`);
      return;
    }
    const sources: Turn[] = [];
    for (const given of memory.sources) {
      const ref = normalRef(given);
      const turn = window.refs.get(ref);
      if (turn) {
        if (!sources.includes(turn)) sources.push(turn);
        if (ref !== given) memory.mended.push(`ref '${given.slice(0, 20)}' read as ${ref}`);
      } else dropped.push(`${at} cites '${given.slice(0, 40)}', which the window does not hold: ref dropped`);
    }
    // With no source the window holds, the one turn that shares the most of its words, as for a wrong one.
    const grounded = groundedSources({ subject: memory.subject ?? "", text: memory.text }, sources, window);
    if (grounded.sources.length === 0) {
      dropped.push(`${at} ("${memory.text.slice(0, 60)}") has no source the window holds: memory dropped`);
      return;
    }
    if (grounded.note) memory.mended.push(grounded.note);
    const subject = memory.subject ?? speakerOf(grounded.sources);
    if (subject === null) {
      dropped.push(`${at} ${describe(raw)}: subject must be a non-empty string: memory dropped`);
      return;
    }
    if (memory.subject === null) memory.mended.push(`no subject given: read as ${subject}, who said its source turns`);
    if (memories.length >= MEMORIES_PER_WINDOW) {
      dropped.push(`${at} is past the ${MEMORIES_PER_WINDOW} a window may add: memory dropped`);
      return;
    }
    memories.push({ ...memory, subject, sources: grounded.sources });
  });
  return { memories, dropped };
}

/** A memory the contract cannot read; its message is the reason it is dropped. */
class MemoryProblem extends Error {}

/**
 * The one speaker of a memory's source turns, for a memory given no subject: models leave it out for what someone
 * says of themselves ("Loves hiking"). Null when the turns have two speakers, whose memory it is not plain.
 */
function speakerOf(sources: readonly Turn[]): string | null {
  const speakers = new Set(sources.map((turn) => turn.speaker.trim()).filter(Boolean));
  return speakers.size === 1 ? [...speakers][0]!.slice(0, SUBJECT_MAX_CHARS) : null;
}

function checkMemory(
  raw: unknown,
  at: string,
  dropped: string[],
): Omit<ValidMemory, "sources" | "subject"> & { sources: string[]; subject: string | null } {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new MemoryProblem("is not an object");
  const mended: string[] = [];
  const m = withContractNames(raw as Record<string, unknown>, mended);
  const kind = memoryKind(m.type, mended);
  // Absent or empty, the speaker of its sources may stand in (readList); another type is no subject to read.
  const subject =
    m.subject === undefined || m.subject === null || (typeof m.subject === "string" && m.subject.trim() === "")
      ? null
      : text(m.subject, "subject", SUBJECT_MAX_CHARS);
  const body = text(m.text, "text", MEMORY_TEXT_MAX_CHARS);
  if (m.key !== undefined && m.key !== null && typeof m.key !== "string")
    dropped.push(
      `${at} ${describe(raw)}: key must be a string or null (got ${typeof m.key}): key dropped, the memory kept`,
    );
  const key = typeof m.key === "string" ? snakeKey(m.key) : null;
  if (typeof m.key === "string" && key === null && m.key.trim() !== "") mended.push(`key '${m.key}' read as none`);
  const when = whenOrNone(m.when, mended, (problem) =>
    dropped.push(`${at} ${describe(raw)}: ${problem}: when dropped, the memory kept (valid from its turn)`),
  );
  return { kind, subject, key, text: body, ...when, sources: refs(m.sources, at), mended };
}

/** Fields a model names otherwise, by the contract's name: read under it when the contract's own is absent. */
const NEAR_NAMES: Record<string, string[]> = {
  type: ["kind", "memory_type"],
  text: ["content", "memory", "statement"],
  sources: ["source", "refs", "source_refs"],
};

function withContractNames(m: Record<string, unknown>, mended: string[]): Record<string, unknown> {
  const named = { ...m };
  for (const [field, near] of Object.entries(NEAR_NAMES)) {
    if (named[field] !== undefined) continue;
    const given = near.find((name) => m[name] !== undefined);
    if (given === undefined) continue;
    named[field] = m[given];
    mended.push(`field '${given}' read as ${field}`);
  }
  return named;
}

function memoryKind(value: unknown, mended: string[]): MemoryKind {
  if (typeof value !== "string") throw new MemoryProblem(`type must be one of ${MEMORY_KINDS.join(", ")}`);
  // Case, a plural and punctuation around ("Fact.", "[event]") do not change the kind named.
  const lower = value
    .trim()
    .toLowerCase()
    .replace(/^[^\p{L}]+|[^\p{L}]+$/gu, "");
  // A plural ("facts", "preferences") names the same kind.
  const kind = (MEMORY_KINDS as readonly string[]).includes(lower) ? lower : lower.replace(/s$/, "");
  if (!(MEMORY_KINDS as readonly string[]).includes(kind))
    throw new MemoryProblem(`type '${value.slice(0, 40)}' is not one of ${MEMORY_KINDS.join(", ")}`);
  if (kind !== value) mended.push(`type '${value}' read as ${kind}`);
  return kind as MemoryKind;
}

function text(value: unknown, field: string, max: number): string {
  if (typeof value !== "string" || value.trim() === "") throw new MemoryProblem(`${field} must be a non-empty string`);
  const trimmed = value.replace(/\s+/g, " ").trim();
  if (trimmed.length > max) throw new MemoryProblem(`${field} is ${trimmed.length} characters; at most ${max}`);
  return trimmed;
}

/**
 * The refs as given: an array of refs, one ref, or several in one string ("T3, T5"). A bare number n stays as written
 * here, and normalRef reads it as Tn (the prompt numbers its turns T1, T2, ...), so the reason shows "3" read as T3.
 */
function refs(value: unknown, at: string): string[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  if (list.some((s) => typeof s !== "string" && !(typeof s === "number" && Number.isInteger(s) && s > 0)))
    throw new MemoryProblem(`sources must be an array of refs like "T3" (${at})`);
  return list.flatMap((s) => (typeof s === "number" ? [String(s)] : splitRefs(s as string)));
}

/** One ref as models write it: T3, [T3], (t3), T-3, "turn 3", "Turn #3". */
const REF = /[[(]?\s*t(?:urn)?\s*[#-]?\s*\d+\s*[\])]?/gi;

/** "T3, T5", "T3 and T5", "[T3][T5]" or "turns T3 and T5" as its refs; anything else as one ref. */
function splitRefs(given: string): string[] {
  const parts = given.match(REF);
  const rest = given.replace(REF, " ").replace(/\b(?:and|turns)\b|[\s,;&:.]/gi, "");
  return parts && parts.length > 1 && rest === "" ? parts.map((part) => part.trim()) : [given];
}

/** A ref as the prompt writes it: "[T3]", "t3", " T3 ", "T3:", "turn 3" and 3 are T3. */
export function normalRef(ref: string): string {
  const match = /^\s*[[(]?\s*(?:t(?:urn)?\s*[#-]?\s*)?(\d+)\s*[\])]?\s*[:.]?\s*$/i.exec(ref);
  return match ? `T${Number(match[1])}` : ref.trim();
}

/** A key as snake_case letters (any script), digits and underscores; null when nothing is left. */
export function snakeKey(value: string): string | null {
  const key = value
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, KEY_MAX_CHARS);
  return key === "" || key === "null" || key === "none" ? null : key;
}

const NO_WHEN = new Set(["", "null", "none", "n/a", "unknown"]);

/**
 * `when` as the start of the period it names: a day (YYYY-MM-DD, or a timestamp, whose day counts), a month
 * (YYYY-MM) or a year (YYYY), with that precision; "" and "null" are none.
 */
export function readWhen(
  value: unknown,
  mended: string[] = [],
): { when: number | null; whenPrecision: WhenPrecision | null } {
  if (value === undefined || value === null) return { when: null, whenPrecision: null };
  if (typeof value === "number" && Number.isInteger(value) && value >= 1000 && value <= 9999) value = String(value);
  if (typeof value !== "string") throw new MemoryProblem("when must be a date (YYYY-MM-DD) or null");
  const given = value.trim();
  if (NO_WHEN.has(given.toLowerCase())) {
    if (given !== "") mended.push(`when '${given}' read as none`);
    return { when: null, whenPrecision: null };
  }
  const match = /^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?)?)?$/.exec(given);
  if (match) {
    const [year, month, day] = [Number(match[1]), match[2] ? Number(match[2]) : 1, match[3] ? Number(match[3]) : 1];
    const ms = Date.UTC(year, month - 1, day);
    const date = new Date(ms);
    if (month >= 1 && month <= 12 && date.getUTCDate() === day && date.getUTCMonth() === month - 1) {
      const whenPrecision: WhenPrecision = match[3] ? "day" : match[2] ? "month" : "year";
      if (whenPrecision !== "day") mended.push(`when '${given}' read as the ${whenPrecision} from ${iso(ms)}`);
      else if (given !== iso(ms)) mended.push(`when '${given}' read as the day ${iso(ms)}`);
      return { when: ms, whenPrecision };
    }
  }
  const written = writtenDate(given);
  if (written) {
    mended.push(
      `when '${given}' read as the ${written.whenPrecision === "day" ? "day" : "month from"} ${iso(written.when)}`,
    );
    return written;
  }
  throw new MemoryProblem(`when '${given.slice(0, 40)}' is not a date as YYYY-MM-DD, YYYY-MM or YYYY`);
}

/**
 * `when` as readWhen reads it; one it cannot read is left out rather than the memory: the memory is still right, and
 * its first source turn's time stands in for when it became true, as for a memory given no `when`.
 */
function whenOrNone(
  value: unknown,
  mended: string[],
  drop: (problem: string) => void,
): { when: number | null; whenPrecision: WhenPrecision | null } {
  try {
    return readWhen(value, mended);
  } catch (error) {
    if (!(error instanceof MemoryProblem)) throw error;
    drop(error.message);
    return { when: null, whenPrecision: null };
  }
}

const MONTHS = "january february march april may june july august september october november december".split(" ");

/** A month's number (1-12) from its English name, whole or its first three letters ("sept" too); 0 otherwise. */
function monthOf(word: string | undefined): number {
  if (word === undefined) return 0;
  const at = MONTHS.findIndex(
    (name) => name === word || name.slice(0, 3) === word || (word === "sept" && name === "september"),
  );
  return at + 1;
}

/**
 * A date written otherwise than the contract asks, with one plain meaning: "2023/05/07", "May 7, 2023",
 * "7 May 2023", "May 2023" (English month names). Null for anything else.
 */
function writtenDate(given: string): { when: number; whenPrecision: WhenPrecision } | null {
  const slashed = /^(\d{4})[/.](\d{1,2})[/.](\d{1,2})$/.exec(given);
  if (slashed) return calendarDay(Number(slashed[1]), Number(slashed[2]), Number(slashed[3]));
  const words = given
    .toLowerCase()
    .replace(/[,.]/g, " ")
    .replace(/(\d)(st|nd|rd|th)\b/g, "$1")
    .trim()
    .split(/\s+/);
  const year = (word: string | undefined) => (word && /^\d{4}$/.test(word) ? Number(word) : 0);
  const day = (word: string | undefined) => (word && /^\d{1,2}$/.test(word) ? Number(word) : 0);
  const [a, b, c] = words;
  if (words.length === 3 && monthOf(a) && day(b) && year(c)) return calendarDay(year(c), monthOf(a), day(b));
  if (words.length === 3 && day(a) && monthOf(b) && year(c)) return calendarDay(year(c), monthOf(b), day(a));
  if (words.length === 2 && monthOf(a) && year(b))
    return { when: Date.UTC(year(b), monthOf(a) - 1, 1), whenPrecision: "month" };
  return null;
}

function calendarDay(year: number, month: number, day: number): { when: number; whenPrecision: WhenPrecision } | null {
  const ms = Date.UTC(year, month - 1, day);
  const date = new Date(ms);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? { when: ms, whenPrecision: "day" } : null;
}

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A memory as a reason names it: its text's start, when it has one. */
function describe(raw: unknown): string {
  const body = (raw as { text?: unknown } | null)?.text;
  return typeof body === "string" && body.trim() !== "" ? `("${body.trim().slice(0, 60)}")` : "";
}
