import { sha256Hex } from "../../crypto";
import type { TenantScope } from "../../db/scope";
import { CONTRACT_VERSION, type PromptTurn } from "./contract";
import { turnRole } from "./roles";

/** A conversation turn as extraction reads it. */
export interface Turn {
  id: string;
  position: number;
  speaker: string;
  /** The turn's role as stored (user, assistant, system, tool, or a client's own word); null without one. */
  role: string | null;
  content: string;
  tokens: number;
  createdAt: number;
}

/** Turns of one window: those to extract from, and the few before them shown for context. */
export interface Window {
  /** A hash of the tenant, conversation and turns: the same window always has the same id. */
  id: string;
  turns: Turn[];
  context: Turn[];
  /** Refs as the prompt shows them (T1, T2, ...: context turns first), to the turns' item ids. */
  refs: Map<string, Turn>;
}

/** Most turns one read brings: a window never needs more, and the job reads again for the next. */
export const TURNS_PER_READ = 200;

/**
 * The conversation's turns from `fromPosition` on (up to `toPosition` when given), in order, with the `overlap`
 * turns before it; the speaker is the first line of the turn's chunk context (a message's chunk context starts with
 * its speaker). A document's (`document`): its chunks in reading order, each a turn of role `document` spoken by the
 * document's title, its text led by its section path.
 */
export async function readTurns(
  scope: TenantScope,
  conversationId: string,
  fromPosition: number,
  overlap: number,
  toPosition = Number.MAX_SAFE_INTEGER,
  document = false,
): Promise<{ context: Turn[]; turns: Turn[] }> {
  const { results } = await scope.d1
    .prepare(document ? DOCUMENT_TURNS : CONVERSATION_TURNS)
    .bind(scope.tenantId, conversationId, Math.max(0, fromPosition - overlap), toPosition, TURNS_PER_READ + overlap)
    .all<{
      id: string;
      position: number;
      role: string | null;
      content: string;
      tokens: number;
      created_at: number;
      speaker: string;
    }>();
  const all = results.map((r) => ({
    id: r.id,
    position: r.position,
    speaker: r.speaker || "unknown",
    role: r.role,
    content: r.content,
    tokens: r.tokens,
    createdAt: r.created_at,
  }));
  return {
    context: all.filter((t) => t.position < fromPosition),
    turns: all.filter((t) => t.position >= fromPosition),
  };
}

const CONVERSATION_TURNS = `SELECT i.id, i.position, i.role, i.content, i.tokens, i.created_at, COALESCE(
    (SELECT substr(c.context, 1, instr(c.context || char(10), char(10)) - 1) FROM chunks c
     WHERE c.tenant_id = i.tenant_id AND c.item_id = i.id AND c.chunk_index = 0), i.role, '') AS speaker
  FROM items i
  WHERE i.tenant_id = ? AND i.conversation_id = ? AND i.position >= ? AND i.position <= ?
  ORDER BY i.position LIMIT ?`;

// The title by an uncorrelated subquery: SQLite reads the document's row once, not once a chunk as a join would.
const DOCUMENT_TURNS = `SELECT i.id, i.position, 'document' AS role, i.tokens, i.created_at,
    (SELECT title FROM documents WHERE tenant_id = ?1 AND id = ?2) AS speaker,
    CASE WHEN COALESCE(i.document_section, '') = '' THEN i.content ELSE '[' || i.document_section || '] ' || i.content END AS content
  FROM items i
  WHERE i.tenant_id = ?1 AND i.document_id = ?2 AND i.position >= ?3 AND i.position <= ?4
  ORDER BY i.position LIMIT ?5`;

/**
 * Cuts turns into windows of at most `maxTokens` (a turn longer than that is a window of its own). The last window
 * is `complete` only when a turn follows it (it could not grow) or `flush` says the conversation is done for now.
 */
export function cutWindows(
  turns: readonly Turn[],
  maxTokens: number,
  flush: boolean,
): { windows: Turn[][]; lastComplete: boolean } {
  const windows: Turn[][] = [];
  let current: Turn[] = [];
  let tokens = 0;
  for (const turn of turns) {
    if (current.length > 0 && tokens + turn.tokens > maxTokens) {
      windows.push(current);
      current = [];
      tokens = 0;
    }
    current.push(turn);
    tokens += turn.tokens;
  }
  if (current.length === 0) return { windows, lastComplete: true };
  windows.push(current);
  return { windows, lastComplete: flush || tokens >= maxTokens };
}

/** What reads a window besides its turns: the model and contract that read it, and the conversation's epoch. */
export interface WindowReader {
  model: string;
  /** conversations.extraction_epoch: memory_reextract starts a new one, whose windows are new windows. */
  epoch: number;
}

/**
 * A window with its context (the `overlap` turns before it, from `before`) and its id: a hash of the tenant, the
 * conversation, its turns, and what reads it (model, contract version, epoch), so the same turns read by the same
 * model under the same contract always make the same id, and a new model or contract makes new windows.
 */
export async function windowOf(
  tenantId: string,
  conversationId: string,
  turns: Turn[],
  before: readonly Turn[],
  overlap: number,
  reader: WindowReader,
): Promise<Window> {
  const id = await sha256Hex(
    JSON.stringify([
      tenantId,
      conversationId,
      turns.map((t) => [t.id, t.position]),
      reader.model,
      CONTRACT_VERSION,
      reader.epoch,
    ]),
  );
  return { ...partOf(turns, before, overlap), id: id.slice(0, 32) };
}

/** Turns with their context and refs (T1, T2, ...: context turns first), as a window or a part of one. */
export function partOf(turns: Turn[], before: readonly Turn[], overlap: number): Omit<Window, "id"> {
  const context = overlap > 0 ? before.slice(-overlap) : [];
  const refs = new Map<string, Turn>();
  [...context, ...turns].forEach((turn, i) => {
    refs.set(`T${i + 1}`, turn);
  });
  return { turns, context, refs };
}

/** A window's turns as the prompt shows them. */
export function promptTurns(window: Omit<Window, "id">): { context: PromptTurn[]; turns: PromptTurn[] } {
  const asPrompt = (turn: Turn, i: number): PromptTurn => ({
    ref: `T${i + 1}`,
    at: turn.createdAt,
    speaker: turn.speaker,
    role: turnRole(turn.role),
    text: turn.content,
  });
  return {
    context: window.context.map(asPrompt),
    turns: window.turns.map((turn, i) => asPrompt(turn, i + window.context.length)),
  };
}
