import {
  KEY_MAX_CHARS,
  MEMORIES_PER_WINDOW,
  MEMORY_KINDS,
  MEMORY_TEXT_MAX_CHARS,
  type MemoryKind,
  SUBJECT_MAX_CHARS,
} from "./contract";
import type { Turn, Window } from "./windows";

/** A memory the answer gave, checked against the contract, its refs resolved to the window's turns. */
export interface ValidMemory {
  kind: MemoryKind;
  subject: string;
  /** snake_case, or null. */
  key: string | null;
  text: string;
  /** An event's day (00:00 UTC, epoch ms), or null. */
  when: number | null;
  sources: Turn[];
}

/** An answer that breaks the contract; its message goes back to the model when it is asked again. */
export class AnswerError extends Error {}

/** The answer's memories, and what was dropped from it (refs the window does not hold, memories past the limit). */
export function readAnswer(content: unknown, window: Window): { memories: ValidMemory[]; dropped: string[] } {
  const value = typeof content === "string" ? parseJson(content) : content;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new AnswerError('The answer must be a JSON object: {"memories": [...]}.');
  const list = (value as { memories?: unknown }).memories;
  if (!Array.isArray(list)) throw new AnswerError('The answer must have "memories": an array.');
  const memories: ValidMemory[] = [];
  const dropped: string[] = [];
  list.forEach((raw, i) => {
    const memory = checkMemory(raw, i);
    const sources: Turn[] = [];
    for (const ref of memory.sources) {
      const turn = window.refs.get(ref.trim());
      if (turn) {
        if (!sources.includes(turn)) sources.push(turn);
      } else dropped.push(`memories[${i}] cites '${ref.slice(0, 40)}', which the window does not hold: ref dropped`);
    }
    if (sources.length === 0) {
      dropped.push(`memories[${i}] ("${memory.text.slice(0, 60)}") has no source the window holds: memory dropped`);
      return;
    }
    if (memories.length >= MEMORIES_PER_WINDOW) {
      dropped.push(`memories[${i}] is past the ${MEMORIES_PER_WINDOW} a window may add: memory dropped`);
      return;
    }
    memories.push({ ...memory, sources });
  });
  return { memories, dropped };
}

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

function checkMemory(raw: unknown, i: number): Omit<ValidMemory, "sources"> & { sources: string[] } {
  const at = `memories[${i}]`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new AnswerError(`${at} must be an object.`);
  const m = raw as Record<string, unknown>;
  for (const field of ["type", "subject", "key", "text", "when", "sources"]) {
    if (!(field in m)) throw new AnswerError(`${at} lacks "${field}" (every field is required; use null where none).`);
  }
  if (typeof m.type !== "string" || !(MEMORY_KINDS as readonly string[]).includes(m.type))
    throw new AnswerError(`${at}.type must be one of ${MEMORY_KINDS.join(", ")}.`);
  const subject = text(m.subject, `${at}.subject`, SUBJECT_MAX_CHARS);
  const body = text(m.text, `${at}.text`, MEMORY_TEXT_MAX_CHARS);
  if (m.key !== null && typeof m.key !== "string") throw new AnswerError(`${at}.key must be a string or null.`);
  if (m.when !== null && typeof m.when !== "string") throw new AnswerError(`${at}.when must be YYYY-MM-DD or null.`);
  if (!Array.isArray(m.sources) || m.sources.some((s) => typeof s !== "string"))
    throw new AnswerError(`${at}.sources must be an array of refs like "T3".`);
  return {
    kind: m.type as MemoryKind,
    subject,
    key: m.key === null ? null : snakeKey(m.key),
    text: body,
    when: m.when === null ? null : day(m.when, `${at}.when`),
    sources: m.sources as string[],
  };
}

function text(value: unknown, at: string, max: number): string {
  if (typeof value !== "string" || value.trim() === "") throw new AnswerError(`${at} must be a non-empty string.`);
  const trimmed = value.replace(/\s+/g, " ").trim();
  if (trimmed.length > max) throw new AnswerError(`${at} is ${trimmed.length} characters; at most ${max}.`);
  return trimmed;
}

/** A key as snake_case letters, digits and underscores; null when nothing is left. */
function snakeKey(value: string): string | null {
  const key = value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, KEY_MAX_CHARS);
  return key === "" ? null : key;
}

function day(value: string, at: string): number {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value.trim());
  const ms = match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : Number.NaN;
  if (!match || Number.isNaN(ms) || new Date(ms).getUTCDate() !== Number(match[3]))
    throw new AnswerError(`${at} must be a date as YYYY-MM-DD or null (got '${value.slice(0, 40)}').`);
  return ms;
}
