import { sha256Hex } from "../../crypto";
import type { TenantScope } from "../../db/scope";
import type { PromptTurn } from "./contract";

/** A conversation turn as extraction reads it. */
export interface Turn {
  id: string;
  position: number;
  speaker: string;
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
 * The conversation's turns from `fromPosition` on, in order, with the `overlap` turns before it; the speaker is
 * the first line of the turn's chunk context (a message's chunk context starts with its speaker).
 */
export async function readTurns(
  scope: TenantScope,
  conversationId: string,
  fromPosition: number,
  overlap: number,
): Promise<{ context: Turn[]; turns: Turn[] }> {
  const { results } = await scope.d1
    .prepare(
      `SELECT i.id, i.position, i.content, i.tokens, i.created_at, COALESCE(
         (SELECT substr(c.context, 1, instr(c.context || char(10), char(10)) - 1) FROM chunks c
          WHERE c.tenant_id = i.tenant_id AND c.item_id = i.id AND c.chunk_index = 0), i.role, '') AS speaker
       FROM items i
       WHERE i.tenant_id = ? AND i.conversation_id = ? AND i.position >= ?
       ORDER BY i.position LIMIT ?`,
    )
    .bind(scope.tenantId, conversationId, Math.max(0, fromPosition - overlap), TURNS_PER_READ + overlap)
    .all<{ id: string; position: number; content: string; tokens: number; created_at: number; speaker: string }>();
  const all = results.map((r) => ({
    id: r.id,
    position: r.position,
    speaker: r.speaker || "unknown",
    content: r.content,
    tokens: r.tokens,
    createdAt: r.created_at,
  }));
  return {
    context: all.filter((t) => t.position < fromPosition),
    turns: all.filter((t) => t.position >= fromPosition),
  };
}

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

/** A window with its context (the `overlap` turns before it, from `before`) and its id. */
export async function windowOf(
  tenantId: string,
  conversationId: string,
  turns: Turn[],
  before: readonly Turn[],
  overlap: number,
): Promise<Window> {
  const context = overlap > 0 ? before.slice(-overlap) : [];
  const refs = new Map<string, Turn>();
  [...context, ...turns].forEach((turn, i) => {
    refs.set(`T${i + 1}`, turn);
  });
  const id = await sha256Hex(JSON.stringify([tenantId, conversationId, turns.map((t) => [t.id, t.position])]));
  return { id: id.slice(0, 32), turns, context, refs };
}

/** A window's turns as the prompt shows them. */
export function promptTurns(window: Window): { context: PromptTurn[]; turns: PromptTurn[] } {
  const asPrompt = (turn: Turn, i: number): PromptTurn => ({
    ref: `T${i + 1}`,
    at: turn.createdAt,
    speaker: turn.speaker,
    text: turn.content,
  });
  return {
    context: window.context.map(asPrompt),
    turns: window.turns.map((turn, i) => asPrompt(turn, i + window.context.length)),
  };
}
