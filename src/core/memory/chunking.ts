import type { TokenCounter } from "../../shared/tokens";

export interface TextChunk {
  content: string;
  tokens: number;
  /**
   * The Markdown headings a chunk of a longer text sits under, outermost first ("Deploy guide", "Rollback"), when its
   * own text does not start them: they say what its words are about (chunk context, items.ts). Absent when none.
   */
  headings?: string[];
}

export interface ChunkOptions {
  /** Largest chunk, in tokens of the counting encoding; kept under the embedder's input limit. */
  maxTokens: number;
  /** Tokens of the previous chunk's tail repeated at the start of the next. */
  overlapTokens: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { maxTokens: 350, overlapTokens: 40 };

/**
 * Splits text on paragraph, then sentence boundaries, packing pieces greedily up to maxTokens.
 * A sentence longer than maxTokens is cut at token boundaries. `totalTokens` is the text's stored
 * count, so a text that fits in one chunk is not tokenized twice.
 */
export function chunkText(
  text: string,
  totalTokens: number,
  counter: TokenCounter,
  options: ChunkOptions = DEFAULT_CHUNKING,
): TextChunk[] {
  if (totalTokens <= options.maxTokens) return [{ content: text, tokens: totalTokens }];
  return packPieces(splitPieces(text, counter, options.maxTokens), options, (pieces) => {
    const content = pieces.map((p) => p.text).join(" ");
    const headings = pieces[0]!.headings;
    return headings.length > 0
      ? { content, tokens: counter.count(content), headings }
      : { content, tokens: counter.count(content) };
  });
}

/** A piece of text to pack: a paragraph, a sentence or a cut of one, with its tokens (the joining space not counted). */
export interface PackedPiece {
  text: string;
  tokens: number;
}

/**
 * Greedy packing up to maxTokens, carrying up to overlapTokens of a chunk's tail into the next; `chunk` makes each
 * chunk from its pieces (never none). Documents' sections pack their pieces the same way (documents/sections.ts).
 */
export function packPieces<P extends PackedPiece, C>(
  pieces: readonly P[],
  options: ChunkOptions,
  chunk: (pieces: P[]) => C,
): C[] {
  const chunks: C[] = [];
  let current: P[] = [];
  let currentTokens = 0;
  let hasNewText = false; // false while `current` holds only the previous chunk's overlap
  const flush = () => {
    chunks.push(chunk(current));
    const carried: P[] = [];
    let carriedTokens = 0;
    for (let i = current.length - 1; i >= 0; i--) {
      const piece = current[i]!;
      if (carriedTokens + piece.tokens + 1 > options.overlapTokens) break;
      carried.unshift(piece);
      carriedTokens += piece.tokens + 1;
    }
    current = carried;
    currentTokens = carriedTokens;
    hasNewText = false;
  };
  for (const piece of pieces) {
    // +1 for the joining space; the exact count is taken on the final chunk text
    if (hasNewText && currentTokens + piece.tokens + 1 > options.maxTokens) flush();
    if (currentTokens + piece.tokens + 1 > options.maxTokens) {
      current = []; // overlap would push a maximal piece over the limit: drop it
      currentTokens = 0;
    }
    current.push(piece);
    currentTokens += piece.tokens + 1;
    hasNewText = true;
  }
  if (hasNewText) flush();
  return chunks;
}

interface Piece {
  text: string;
  tokens: number;
  /** The headings in force before this piece (outermost first). */
  headings: string[];
}

/** An ATX heading line ("## Rollback", "# Title #"); its level and text. */
const HEADING = /^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/;
/** A fenced code block's fence: a "# comment" inside one is not a heading. */
const FENCE = /^(?:```|~~~)/;
/** The most heading text kept per level: a heading is a title, not a paragraph. */
const MAX_HEADING_CHARS = 120;

function splitPieces(text: string, counter: TokenCounter, maxTokens: number): Piece[] {
  const pieces: Piece[] = [];
  const open: { level: number; text: string }[] = [];
  let headings: string[] = [];
  let fenced = false;
  for (const paragraph of text.split(/\n\s*\n/)) {
    for (const sentence of paragraph.split(/(?<=[.!?。！？])\s+|\n/)) {
      const trimmed = sentence.trim();
      if (!trimmed) continue;
      const tokens = counter.encode(trimmed);
      if (tokens.length <= maxTokens) pieces.push({ text: trimmed, tokens: tokens.length, headings });
      else {
        for (let i = 0; i < tokens.length; i += maxTokens) {
          const slice = counter.decode(tokens.slice(i, i + maxTokens));
          pieces.push({ text: slice, tokens: counter.count(slice), headings });
        }
      }
      if (FENCE.test(trimmed)) fenced = !fenced;
      const heading = fenced ? null : HEADING.exec(trimmed);
      if (heading) {
        const level = heading[1]!.length;
        while (open.length > 0 && open.at(-1)!.level >= level) open.pop();
        open.push({ level, text: heading[2]!.slice(0, MAX_HEADING_CHARS) });
        headings = open.map((h) => h.text);
      }
    }
  }
  return pieces;
}
