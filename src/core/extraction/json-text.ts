// Walking JSON text the way a parser reads it: a bracket or comma inside a string (with its escapes) is text, not
// structure. Shared by the readers of a model's answer (answer-json.ts) and of a cut one (salvage.ts).

/**
 * Calls `visit` for each character of `text` from `from` on that stands outside a string (the quotes themselves
 * included), until it answers true; returns that index, or -1 at the end.
 */
export function scanOutsideStrings(text: string, from: number, visit: (c: string, i: number) => unknown): number {
  let inString = false;
  let escaped = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    if (visit(c, i) === true) return i;
  }
  return -1;
}
