import { scanOutsideStrings } from "./json-text";

// Finding the JSON in a model's answer. Models asked for JSON still wrap it: a Markdown fence, a sentence before or
// after, a trailing comma, a bare array of memories, or the array written as a string. Each of these has one plain
// meaning, so it is read as meant (and said so) instead of asking the model again, which tends to answer alike.

/** The answer's `memories` list and how it was found, or null when the text holds no JSON with one. */
export interface FoundMemories {
  list: unknown[];
  /** How the answer's shape was read, when it was not the contract's own (for the decision's reason). */
  mended: string[];
}

/**
 * The memories of an answer: `{"memories": [...]}` as JSON, or found inside prose or a fence, with trailing commas
 * dropped, a bare array taken as the list, and a list given as a JSON string parsed. Null when no such list is there.
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
    if (!Array.isArray(p.value)) {
      const found = listOf(p.value, [...inner, ...p.mended]);
      if (found) return found;
    }
  for (const p of parsed)
    if (Array.isArray(p.value) && p.value.length > 0 && p.value.every(isObject))
      return listOf(p.value, [...inner, ...p.mended]);
  return null;
}

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function listOf(value: unknown, mended: string[]): FoundMemories | null {
  if (Array.isArray(value)) return { list: value, mended: [...mended, "a bare array read as the memories"] };
  if (typeof value !== "object" || value === null) return null;
  const list = (value as { memories?: unknown }).memories;
  if (Array.isArray(list)) return { list, mended };
  if (typeof list === "string") {
    const inner = parseLenient(list.trim());
    if (inner.ok && Array.isArray(inner.value))
      return { list: inner.value, mended: [...mended, "memories given as a string read as its JSON"] };
  }
  return null;
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
