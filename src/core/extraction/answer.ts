import type { WhenPrecision } from "../memory/item-types";
import {
  KEY_MAX_CHARS,
  MEMORIES_PER_WINDOW,
  MEMORY_KINDS,
  MEMORY_TEXT_MAX_CHARS,
  type MemoryKind,
  SUBJECT_MAX_CHARS,
} from "./contract";
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
 * others are kept; plain slips are mended (a type in any case, `when` of "" or "null", a partial date, a ref
 * written "[T3]" or "t3", a key of ""). Only an answer that is not JSON or has no `memories` array is refused
 * whole. A `cut` answer (the model ran out of output) keeps the memories that came whole before the cut.
 */
export function readAnswer(content: unknown, window: Window, cut = false): ReadAnswer {
  if (cut && typeof content === "string") {
    const salvaged = salvageMemories(content);
    const read = readList(salvaged.memories, window);
    if (salvaged.lost)
      read.dropped.push(`the answer was cut after ${salvaged.memories.length} whole memories: the rest dropped`);
    return read;
  }
  const value = typeof content === "string" ? parseJson(content) : content;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new AnswerError('The answer must be a JSON object: {"memories": [...]}.');
  const list = (value as { memories?: unknown }).memories;
  if (!Array.isArray(list)) throw new AnswerError('The answer must have "memories": an array.');
  return readList(list, window);
}

function readList(list: readonly unknown[], window: Window): ReadAnswer {
  const memories: ValidMemory[] = [];
  const dropped: string[] = [];
  list.forEach((raw, i) => {
    const at = `memories[${i}]`;
    let memory: ReturnType<typeof checkMemory>;
    try {
      memory = checkMemory(raw, at);
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
    if (sources.length === 0) {
      dropped.push(`${at} ("${memory.text.slice(0, 60)}") has no source the window holds: memory dropped`);
      return;
    }
    if (memories.length >= MEMORIES_PER_WINDOW) {
      dropped.push(`${at} is past the ${MEMORIES_PER_WINDOW} a window may add: memory dropped`);
      return;
    }
    memories.push({ ...memory, sources });
  });
  return { memories, dropped };
}

/** A memory the contract cannot read; its message is the reason it is dropped. */
class MemoryProblem extends Error {}

function parseJson(text: string): unknown {
  // Some endpoints wrap JSON in a Markdown fence even in JSON mode.
  const bare = text
    .trim()
    .replace(/^```(?:json)?\s*/i, "")
    .replace(/\s*```$/, "");
  try {
    return JSON.parse(bare);
  } catch (error) {
    throw new AnswerError(`The answer is not valid JSON (${(error as Error).message}).`);
  }
}

function checkMemory(raw: unknown, at: string): Omit<ValidMemory, "sources"> & { sources: string[] } {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new MemoryProblem("is not an object");
  const m = raw as Record<string, unknown>;
  const mended: string[] = [];
  const kind = memoryKind(m.type, mended);
  const subject = text(m.subject, "subject", SUBJECT_MAX_CHARS);
  const body = text(m.text, "text", MEMORY_TEXT_MAX_CHARS);
  if (m.key !== undefined && m.key !== null && typeof m.key !== "string")
    throw new MemoryProblem(`key must be a string or null (got ${typeof m.key})`);
  const key = typeof m.key === "string" ? snakeKey(m.key) : null;
  if (typeof m.key === "string" && key === null && m.key.trim() !== "") mended.push(`key '${m.key}' read as none`);
  const when = readWhen(m.when, mended);
  return { kind, subject, key, text: body, ...when, sources: refs(m.sources, at), mended };
}

function memoryKind(value: unknown, mended: string[]): MemoryKind {
  if (typeof value !== "string") throw new MemoryProblem(`type must be one of ${MEMORY_KINDS.join(", ")}`);
  const kind = value.trim().toLowerCase();
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

function refs(value: unknown, at: string): string[] {
  if (typeof value === "string") return [value];
  if (!Array.isArray(value) || value.some((s) => typeof s !== "string"))
    throw new MemoryProblem(`sources must be an array of refs like "T3" (${at})`);
  return value as string[];
}

/** A ref as the prompt writes it: "[T3]", "t3" and " T3 " are T3. */
export function normalRef(ref: string): string {
  const match = /^\s*\[?\s*[Tt]\s*(\d+)\s*\]?\s*$/.exec(ref);
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
  if (typeof value !== "string") throw new MemoryProblem("when must be a date (YYYY-MM-DD) or null");
  const given = value.trim();
  if (NO_WHEN.has(given.toLowerCase())) {
    if (given !== "") mended.push(`when '${given}' read as none`);
    return { when: null, whenPrecision: null };
  }
  const match = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?)?)?$/.exec(given);
  if (match) {
    const [year, month, day] = [Number(match[1]), match[2] ? Number(match[2]) : 1, match[3] ? Number(match[3]) : 1];
    const ms = Date.UTC(year, month - 1, day);
    const date = new Date(ms);
    if (month >= 1 && month <= 12 && date.getUTCDate() === day && date.getUTCMonth() === month - 1) {
      const whenPrecision: WhenPrecision = match[3] ? "day" : match[2] ? "month" : "year";
      if (whenPrecision !== "day") mended.push(`when '${given}' read as the ${whenPrecision} from ${iso(ms)}`);
      else if (given.length > 10) mended.push(`when '${given}' read as the day ${iso(ms)}`);
      return { when: ms, whenPrecision };
    }
  }
  throw new MemoryProblem(`when '${given.slice(0, 40)}' is not a date as YYYY-MM-DD, YYYY-MM or YYYY`);
}

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A memory as a reason names it: its text's start, when it has one. */
function describe(raw: unknown): string {
  const body = (raw as { text?: unknown } | null)?.text;
  return typeof body === "string" && body.trim() !== "" ? `("${body.trim().slice(0, 60)}")` : "";
}
