import { jsonrepair } from "jsonrepair";
import { scanOutsideStrings } from "./json-text";

// Finding the JSON in a model's answer. Models asked for JSON still wrap it: a Markdown fence, a sentence before or
// after, a trailing comma, a bare array of memories, the array written as a string, the object inside another, one
// memory without its list. Smaller models also write JavaScript or Python instead of JSON: comments, single quotes,
// unquoted keys, None and True, a line break inside a string, one object per line. Each of these has one plain
// meaning, so it is read as meant (and said so) instead of asking the model again, which tends to answer alike.

/** The answer's `memories` list and how it was found, or null when the text holds no JSON with one. */
export interface FoundMemories {
  list: unknown[];
  /** How the answer's shape was read, when it was not the contract's own (for the decision's reason). */
  mended: string[];
}

/**
 * The memories of an answer: `{"memories": [...]}` as JSON, or found inside prose or a fence, with trailing commas
 * dropped, a bare array taken as the list, and a list given as a JSON string parsed. Failing those, the JSON's syntax
 * is repaired (jsonrepair), within the outermost brackets only, so that brackets an answer left open are closed
 * after its last whole memory, never inside a memory it did not finish. Null when no such list is there.
 */
export function findMemories(content: unknown): FoundMemories | null {
  if (typeof content !== "string") return listOf(content, []);
  const text = content.trim();
  const whole = parseLenient(text);
  if (whole.ok) return listOf(whole.value, whole.mended);
  // Inside other text: an object with `memories` first; a bare array only when it holds objects (not "[3]").
  const parsed = jsonSpans(text)
    .map(parseLenient)
    .filter((p): p is Extract<Parsed, { ok: true }> => p.ok);
  const inner = ["the JSON read from inside the answer's other text"];
  for (const p of parsed)
    if (!Array.isArray(p.value) && !looksLikeMemory(p.value)) {
      const found = listOf(p.value, [...inner, ...p.mended]);
      if (found) return found;
    }
  // Memories without a list, one object after another (one per line, as JSON Lines).
  const loose = parsed.filter((p) => looksLikeMemory(p.value));
  if (loose.length > 0)
    return { list: loose.map((p) => p.value), mended: [...inner, "memories given without a list read as the list"] };
  for (const p of parsed)
    if (Array.isArray(p.value) && p.value.length > 0 && p.value.every(isObject))
      return listOf(p.value, [...inner, ...p.mended]);
  return repaired(text);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The longest JSON repaired: twice what the largest default output (4,096 tokens) writes. The repair's time grows
 * faster than the text on some inputs (a run of quotes), so a runaway answer is refused instead.
 */
const REPAIR_MAX_CHARS = 32_000;

/**
 * The list from the text's JSON with its syntax repaired, from its first opening bracket to its last closing one: what
 * a cut answer left unfinished after its last closed bracket is not made whole by the repair.
 */
function repaired(text: string): FoundMemories | null {
  const first = text.search(/[[{]/);
  const last = Math.max(text.lastIndexOf("}"), text.lastIndexOf("]"));
  if (first < 0 || last < first || last - first >= REPAIR_MAX_CHARS) return null;
  let value: unknown;
  try {
    value = JSON.parse(jsonrepair(text.slice(first, last + 1)));
  } catch {
    return null;
  }
  if (Array.isArray(value) && !value.every(isObject)) return null;
  return listOf(value, ["the answer's JSON syntax repaired"]);
}

/** Wrappers a model puts the contract's object in (`{"result": {"memories": [...]}}`), looked into this deep. */
const WRAPPER_DEPTH = 2;

function listOf(value: unknown, mended: string[], depth = 0): FoundMemories | null {
  if (Array.isArray(value)) return { list: value, mended: [...mended, "a bare array read as the memories"] };
  if (!isObject(value)) return null;
  const name = Object.keys(value).find((k) => /^memor(?:ies|y)$/i.test(k.trim()));
  const list = name === undefined ? undefined : value[name];
  const named = name === "memories" ? mended : [...mended, `field '${name}' read as memories`];
  if (Array.isArray(list)) return { list, mended: named };
  // Before the other readings of `memory`: a lone memory may carry its text under that near name.
  if (looksLikeMemory(value)) return { list: [value], mended: [...mended, "one memory without its list read as one"] };
  if (name !== undefined && list === null) return { list: [], mended: [...named, "memories null read as none"] };
  if (isObject(list) && Object.values(list).length > 0 && Object.values(list).every(looksLikeMemory))
    return { list: Object.values(list), mended: [...named, "memories given as an object read as its values"] };
  if (typeof list === "string") {
    const inner = parseLenient(list.trim());
    if (inner.ok && Array.isArray(inner.value))
      return { list: inner.value, mended: [...named, "memories given as a string read as its JSON"] };
  }
  if (depth >= WRAPPER_DEPTH) return null;
  for (const [key, inner] of Object.entries(value))
    if (isObject(inner)) {
      const found = listOf(inner, [...mended, `the memories read from inside '${key}'`], depth + 1);
      if (found) return found;
    }
  return null;
}

/** An object with a memory's own fields (its text under the contract's name or a near one), where the list should be. */
function looksLikeMemory(value: unknown): value is Record<string, unknown> {
  return (
    isObject(value) &&
    typeof (value.text ?? value.content ?? value.statement ?? value.memory) === "string" &&
    (value.type ?? value.kind) != null
  );
}

type Parsed = { ok: true; value: unknown; mended: string[] } | { ok: false };

/** JSON.parse, then again with trailing commas dropped. */
function parseLenient(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text), mended: [] };
  } catch {
    const bare = withoutTrailingCommas(text);
    if (bare === text) return { ok: false };
    try {
      return { ok: true, value: JSON.parse(bare), mended: ["trailing commas dropped"] };
    } catch {
      return { ok: false };
    }
  }
}

/** Spaces then a closing bracket, matched where lastIndex points (sticky: no copy of the rest of the text). */
const CLOSES_NEXT = /\s*[}\]]/y;

/** The text with every comma that stands just before a closing } or ] removed, strings left as they are. */
export function withoutTrailingCommas(text: string): string {
  const trailing: number[] = [];
  scanOutsideStrings(text, 0, (c, i) => {
    if (c !== ",") return;
    CLOSES_NEXT.lastIndex = i + 1;
    if (CLOSES_NEXT.test(text)) trailing.push(i);
  });
  let out = "";
  let from = 0;
  for (const at of trailing) {
    out += text.slice(from, at);
    from = at + 1;
  }
  return out + text.slice(from);
}

/**
 * Every balanced {...} or [...] span of the text that starts outside a string and lies in no other, in order. One
 * pass, whatever the text: a bracket closed by the wrong one drops what was open, and what never closes is skipped.
 */
export function jsonSpans(text: string): string[] {
  const open: { at: number; close: string }[] = [];
  const closed: [number, number][] = [];
  scanOutsideStrings(text, 0, (c, i) => {
    if (c === "{" || c === "[") open.push({ at: i, close: c === "{" ? "}" : "]" });
    else if (c === "}" || c === "]") {
      const top = open.pop();
      if (top?.close === c) closed.push([top.at, i]);
      else open.length = 0;
    }
  });
  // Spans close inner first: one lies in no other when no span closed after it starts before it.
  const outermost: [number, number][] = [];
  for (let k = closed.length - 1, from = Number.POSITIVE_INFINITY; k >= 0; k--) {
    const [start, end] = closed[k]!;
    if (start < from) {
      outermost.push([start, end]);
      from = start;
    }
  }
  return outermost.reverse().map(([start, end]) => text.slice(start, end + 1));
}
