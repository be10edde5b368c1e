import { IN_JSON, type TenantScope } from "../../db/scope";
import { porterStem } from "../../shared/porter";
import { STOPWORDS } from "../../shared/stopwords";
import type { ValidMemory } from "./answer";

/**
 * Two memories of one subject and kind whose words (stemmed, stop words left out) overlap this much, as a share of
 * all the words either has (Jaccard), say the same thing: the second adds nothing. Lexical on purpose: it is the
 * same offline and in production, costs no model or embedding call, and catches rewordings of one sentence
 * ("Caroline moved to Boston" / "Caroline has moved to Boston") without merging different facts that share a
 * subject; docs/extraction.md shows where pairs fall around it.
 */
export const NEAR_DUPLICATE = 0.8;

/** Most current memories of the window's subjects read to compare against (newest first). */
const EXISTING_READ = 500;

/** A current derived memory, as consolidation compares against it. */
export interface ExistingMemory {
  id: string;
  subject: string;
  kind: string;
  key: string | null;
  content: string;
  sources: string[];
}

export type Decision =
  | {
      event: "added";
      memory: ValidMemory;
      /** The key as stored: the subject's and the memory's (caroline.home_city); null without a key. */
      storageKey: string | null;
      /** Current items of that key it replaces (they stay, superseded, as history). */
      supersedes: string[];
      /** The decision of this window whose memory of the same key it replaces, or null. */
      supersedesDecision: number | null;
    }
  | {
      event: "duplicate";
      memory: ValidMemory;
      /** The memory it repeats: an existing id, or the index of a decision of this window that adds one. */
      of: { id: string } | { decision: number };
    };

/** The current derived memories of these subjects, and the current items of these keys, in one round trip. */
export async function readExisting(
  scope: TenantScope,
  project: string,
  subjects: readonly string[],
  keys: readonly string[],
): Promise<{ memories: ExistingMemory[]; keyHolders: Map<string, string[]> }> {
  const [memories, holders] = await scope.d1.batch<Record<string, string | null>>([
    scope.d1
      .prepare(
        `SELECT id, subject, memory_kind, key, content, sources FROM items
         WHERE tenant_id = ? AND project = ? AND memory_kind IS NOT NULL AND subject COLLATE NOCASE ${IN_JSON}
           AND tier <> 'superseded'
         ORDER BY created_at DESC LIMIT ?`,
      )
      .bind(scope.tenantId, project, JSON.stringify(subjects), EXISTING_READ),
    scope.d1
      .prepare(
        `SELECT id, key FROM items WHERE tenant_id = ? AND project = ? AND key ${IN_JSON} AND tier <> 'superseded'`,
      )
      .bind(scope.tenantId, project, JSON.stringify(keys)),
  ]);
  const keyHolders = new Map<string, string[]>();
  for (const row of holders!.results) keyHolders.set(row.key!, [...(keyHolders.get(row.key!) ?? []), row.id!]);
  return {
    memories: memories!.results.map((r) => ({
      id: r.id!,
      subject: r.subject!,
      kind: r.memory_kind!,
      key: r.key ?? null,
      content: r.content!,
      sources: JSON.parse(r.sources ?? "[]") as string[],
    })),
    keyHolders,
  };
}

/** The key a derived memory is stored under: its subject's and its own, so two people's home cities do not meet. */
export function storageKey(subject: string, key: string | null): string | null {
  if (key === null) return null;
  const who = subject
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return `${who || "someone"}.${key}`;
}

/**
 * What each memory of a window becomes, in code and without a model: the same subject and text as a current
 * memory (or a near duplicate of one, NEAR_DUPLICATE) adds nothing and merges its sources into it; a memory of a key
 * that a current item holds supersedes it; anything else is added. Memories of the window are compared with each
 * other too, in order. The subject is spelled as a current memory already spells it.
 */
export function consolidate(
  memories: readonly ValidMemory[],
  existing: readonly ExistingMemory[],
  keyHolders: ReadonlyMap<string, readonly string[]>,
): Decision[] {
  const decisions: Decision[] = [];
  const known = existing.map((m) => ({ ...m, terms: terms(m.content), normal: normalText(m.content) }));
  const added: { decision: number; subject: string; kind: string; terms: Set<string>; normal: string }[] = [];
  const spelling = new Map(existing.map((m) => [m.subject.toLowerCase(), m.subject]));
  const keysTaken = new Map<string, number>();
  for (const given of memories) {
    const memory = { ...given, subject: spelling.get(given.subject.toLowerCase()) ?? given.subject };
    spelling.set(memory.subject.toLowerCase(), memory.subject);
    const memoryTerms = terms(memory.text);
    const normal = normalText(memory.text);
    const same = (other: { subject: string; kind: string; terms: Set<string>; normal: string }) =>
      other.subject.toLowerCase() === memory.subject.toLowerCase() &&
      (other.normal === normal || (other.kind === memory.kind && jaccard(other.terms, memoryTerms) >= NEAR_DUPLICATE));
    const earlier = added.find(same);
    if (earlier) {
      decisions.push({ event: "duplicate", memory, of: { decision: earlier.decision } });
      continue;
    }
    const current = known.find(same);
    if (current) {
      decisions.push({ event: "duplicate", memory, of: { id: current.id } });
      continue;
    }
    const key = storageKey(memory.subject, memory.key);
    // A key the window already gave a memory: that one holds it now, and is what this one replaces.
    const earlierOfKey = key === null ? undefined : keysTaken.get(key);
    const supersedes = key === null || earlierOfKey !== undefined ? [] : [...(keyHolders.get(key) ?? [])];
    if (key !== null) keysTaken.set(key, decisions.length);
    added.push({ decision: decisions.length, subject: memory.subject, kind: memory.kind, terms: memoryTerms, normal });
    decisions.push({ event: "added", memory, storageKey: key, supersedes, supersedesDecision: earlierOfKey ?? null });
  }
  return decisions;
}

/** Lowercase words and digits, single-spaced: what "the same text" compares. */
export function normalText(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

/** A text's stemmed words without stop words. */
export function terms(text: string): Set<string> {
  return new Set(
    normalText(text)
      .split(" ")
      .filter((w) => w !== "" && !STOPWORDS.has(w))
      .map(porterStem),
  );
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const term of a) if (b.has(term)) shared++;
  return shared / (a.size + b.size - shared);
}
