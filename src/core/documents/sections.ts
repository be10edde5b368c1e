import type { DocumentBlock } from "../../shared/document-blocks";
import type { TokenCounter } from "../../shared/tokens";
import { type ChunkOptions, DEFAULT_CHUNKING, packPieces } from "../memory/chunking";

/** A section: the text under one heading path, cut into chunks that stay inside it. */
export interface DocumentSection {
  /** The headings it sits under, outermost first ("Guide", "Install", "Linux"); empty before the first heading. */
  path: string[];
  /** The page its text starts on (PDF), 1-based; null for formats without pages. */
  page: number | null;
  tokens: number;
  chunks: SectionChunk[];
}

export interface SectionChunk {
  content: string;
  tokens: number;
  /** The page the chunk's text starts on; null without pages. */
  page: number | null;
}

/** How a section path reads in citations: "Guide > Install > Linux". */
export const SECTION_SEPARATOR = " > ";

/**
 * Blocks to sections, and each section's text to chunks: a section that fits in one chunk is one chunk; a longer one
 * is cut at paragraph, then sentence boundaries (a sentence over the limit at token boundaries), with a little overlap
 * between its chunks but never across sections. Token counts are taken here, once.
 */
export function sectionDocument(
  blocks: readonly DocumentBlock[],
  counter: TokenCounter,
  options: ChunkOptions = DEFAULT_CHUNKING,
): DocumentSection[] {
  const sections: DocumentSection[] = [];
  const open: { level: number; text: string }[] = [];
  let texts: { text: string; page: number | null }[] = [];
  const close = () => {
    if (texts.length > 0)
      sections.push(
        section(
          open.map((h) => h.text),
          texts,
          counter,
          options,
        ),
      );
    texts = [];
  };
  for (const block of blocks) {
    if (block.kind === "heading") {
      close();
      while (open.length > 0 && open.at(-1)!.level >= block.level) open.pop();
      open.push({ level: block.level, text: block.text });
    } else if (block.text.trim()) {
      texts.push({ text: block.text.trim(), page: block.page ?? null });
    }
  }
  close();
  return sections;
}

interface Piece {
  text: string;
  tokens: number;
  page: number | null;
}

function section(
  path: string[],
  texts: { text: string; page: number | null }[],
  counter: TokenCounter,
  options: ChunkOptions,
): DocumentSection {
  const whole = texts.map((t) => t.text).join("\n\n");
  const tokens = counter.count(whole);
  const page = texts[0]!.page;
  if (tokens <= options.maxTokens) return { path, page, tokens, chunks: [{ content: whole, tokens, page }] };
  const chunks = packPieces(pieces(texts, counter, options.maxTokens), options, (packed) => {
    const content = packed.map((p) => p.text).join(" ");
    return { content, tokens: counter.count(content), page: packed[0]!.page };
  });
  return { path, page, tokens, chunks };
}

/** Paragraphs, then sentences, each with its page; a sentence longer than the limit cut at token boundaries. */
function pieces(texts: { text: string; page: number | null }[], counter: TokenCounter, maxTokens: number): Piece[] {
  const out: Piece[] = [];
  for (const { text, page } of texts) {
    for (const sentence of text.split(/(?<=[.!?。！？])\s+|\n+/)) {
      const trimmed = sentence.trim();
      if (!trimmed) continue;
      const tokens = counter.encode(trimmed);
      if (tokens.length <= maxTokens) out.push({ text: trimmed, tokens: tokens.length, page });
      else
        for (let i = 0; i < tokens.length; i += maxTokens) {
          const slice = counter.decode(tokens.slice(i, i + maxTokens));
          out.push({ text: slice, tokens: counter.count(slice), page });
        }
    }
  }
  return out;
}
