import { scanOutsideStrings } from "./json-text";

/**
 * The memories that came whole in an answer cut off mid-JSON (the model ran out of output tokens): every object of
 * the `memories` array that closed before the cut, and whether something was lost after them. Strings are walked
 * with their escapes, so a brace inside a memory's text does not end it.
 */
export function salvageMemories(text: string): { memories: unknown[]; lost: boolean } {
  // The contract's object, or a bare array of memories (answer-json.ts reads one whole too).
  const start = /"memories"\s*:\s*\[/.exec(text) ?? /^\s*(?:```(?:json)?\s*)?\[/i.exec(text);
  if (!start) return { memories: [], lost: text.trim() !== "" };
  const memories: unknown[] = [];
  let depth = 0;
  let objectStart = -1;
  const end = scanOutsideStrings(text, start.index + start[0].length, (c, i) => {
    if (c === "{") {
      if (depth === 0) objectStart = i;
      depth++;
    } else if (c === "}") {
      depth--;
      if (depth === 0 && objectStart >= 0) {
        try {
          memories.push(JSON.parse(text.slice(objectStart, i + 1)));
        } catch {
          // An object that does not parse on its own is lost with the cut.
        }
        objectStart = -1;
      }
    } else if (c === "]" && depth === 0) return true;
  });
  return { memories, lost: end < 0 };
}
