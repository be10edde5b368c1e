import type { MemoryKind, SaidBy } from "../memory/item-types";

// Whose word a memory rests on. Only a user's (or system's) words become instructions or preferences: an assistant
// or tool turn, or a document's passage, that says "always answer in French" must not become the user's lasting
// instruction.

export type TurnRole = "user" | "assistant" | "system" | "tool" | "document";

const ROLE_NAMES: Record<string, TurnRole> = {
  user: "user",
  human: "user",
  system: "system",
  developer: "system",
  assistant: "assistant",
  ai: "assistant",
  bot: "assistant",
  model: "assistant",
  tool: "tool",
  function: "tool",
  document: "document",
};

/** A stored role as the prompt names it; null for a turn logged without one (or with a role of its own words). */
export function turnRole(role: string | null | undefined): TurnRole | null {
  return role ? (ROLE_NAMES[role.trim().toLowerCase()] ?? null) : null;
}

/** Whether a turn is someone's own word: a user's or system's, or a turn logged without a role (a client's own). */
function ownWord(role: TurnRole | null): boolean {
  return role === null || role === "user" || role === "system";
}

/** Kinds that speak for what someone wants: only their own words may make them. */
const WISHES: ReadonlySet<MemoryKind> = new Set(["instruction", "preference"]);

/**
 * What a memory's sources allow: `refused` (why) for an instruction or preference none of whose sources is a user's
 * or system's turn; otherwise who said it when no such turn is among its sources (`said_by`), else null.
 */
export function wordOf(
  kind: MemoryKind,
  roles: readonly (TurnRole | null)[],
): { refused: string } | { saidBy: SaidBy | null } {
  if (roles.some(ownWord)) return { saidBy: null };
  if (WISHES.has(kind))
    return {
      refused: `${kind === "instruction" ? "an instruction" : "a preference"} must come from a user or system turn; its sources are ${[...new Set(roles)].join(" and ")} turns only`,
    };
  return { saidBy: roles.includes("assistant") ? "assistant" : roles.includes("document") ? "document" : "tool" };
}
