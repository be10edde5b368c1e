import { foldName } from "../../shared/names";
import type { SaidBy } from "../memory/item-types";
import type { ValidMemory } from "./answer";
import { type ComparableText, comparable, likeness, meaningGuard } from "./duplicates";
import { type ExistingMemory, storageKey } from "./known-memories";
import { type KeyedMemory, moved, type TimelinePlace, timeline } from "./timeline";

/** A memory of the answer ready to consolidate: its sources allowed it, and say whose word it is. */
export interface ConsolidatingMemory extends ValidMemory {
  saidBy: SaidBy | null;
}

/** A memory of the window, or one already stored: `new:<decision>` or an item id. */
export type MemoryRef = string;
export const newRef = (decision: number): MemoryRef => `new:${decision}`;

export type Decision =
  | {
      event: "added";
      memory: ConsolidatingMemory;
      /** The key as stored: the subject's and the memory's (caroline.home_city); null without a key. */
      storageKey: string | null;
      /** Why, when it is more than new: stored as history, or kept apart from a look-alike by a guard. */
      reason: string | null;
    }
  | {
      event: "duplicate";
      memory: ConsolidatingMemory;
      /** The memory it repeats: an existing id, or the index of a decision of this window that adds one. */
      of: { id: string } | { decision: number };
      reason: string;
    };

/** A memory whose place on its key's timeline changes (a new one always has one). */
export interface PlaceChange extends Omit<TimelinePlace, "id" | "supersededBy"> {
  ref: MemoryRef;
  supersededBy: MemoryRef | null;
  key: string;
  /** Why it does not hold (a later value does, or a value in between now follows it); null when it holds. */
  supersededReason: string | null;
}

export interface Consolidation {
  decisions: Decision[];
  places: PlaceChange[];
}

/**
 * What each memory of a window becomes, in code and without a model, in answer order: the same subject and text as
 * a current memory (or a near duplicate of one that no guard tells apart, duplicates.ts) adds nothing and merges its
 * sources into it; anything else is added. An event's day tells events apart. A memory with a key takes its place
 * on the key's timeline (timeline.ts): by time, not by arrival. The subject is spelled as a current memory spells it.
 */
export function consolidate(
  memories: readonly ConsolidatingMemory[],
  existing: readonly ExistingMemory[],
  keyMemories: readonly (KeyedMemory & { key: string })[],
): Consolidation {
  const decisions: Decision[] = [];
  const known = existing.map((m) => ({ ...m, text: comparable(m.content), ref: m.id }));
  const added: { decision: number; subject: string; kind: string; when: number | null; text: ComparableText }[] = [];
  const spelling = new Map(existing.map((m) => [foldName(m.subject), m.subject]));
  for (const given of memories) {
    const folded = foldName(given.subject);
    const memory = { ...given, subject: spelling.get(folded) ?? given.subject };
    spelling.set(folded, memory.subject);
    const text = comparable(memory.text);
    let apart: string | null = null;
    const repeats = (other: { subject: string; kind: string; when: number | null; text: ComparableText }) => {
      if (foldName(other.subject) !== folded) return null;
      if (memory.when !== null && other.when !== null && memory.when !== other.when) return null;
      const alike = likeness(other.text, text);
      if (alike.same) return "the same text";
      if (other.kind !== memory.kind || !alike.near) return null;
      const guard = meaningGuard(other.text, text);
      if (guard !== null) {
        apart ??= `a look-alike (Jaccard ${alike.jaccard.toFixed(2)}) kept apart: ${guard}`;
        return null;
      }
      return `a near duplicate (Jaccard ${alike.jaccard.toFixed(2)})`;
    };
    const earlier = firstMatch(added, repeats);
    if (earlier) {
      decisions.push({ event: "duplicate", memory, of: { decision: earlier.item.decision }, reason: earlier.why });
      continue;
    }
    const current = firstMatch(
      known.map((k) => ({ ...k, when: k.dated ? k.validFrom : null })),
      repeats,
    );
    if (current) {
      decisions.push({ event: "duplicate", memory, of: { id: current.item.id }, reason: current.why });
      continue;
    }
    added.push({ decision: decisions.length, subject: memory.subject, kind: memory.kind, when: memory.when, text });
    decisions.push({ event: "added", memory, storageKey: storageKey(memory.subject, memory.key), reason: apart });
  }
  const places = placeOnTimelines(decisions, keyMemories);
  // Every decision says why: what an added memory is, when nothing more specific was said.
  for (const d of decisions)
    if (d.event === "added" && d.reason === null)
      d.reason =
        d.storageKey === null
          ? `new: no memory of ${d.memory.subject} held says the same`
          : `the latest value of ${d.storageKey} in time: it holds now`;
  return { decisions, places };
}

function firstMatch<T>(items: readonly T[], why: (item: T) => string | null): { item: T; why: string } | null {
  for (const item of items) {
    const reason = why(item);
    if (reason !== null) return { item, why: reason };
  }
  return null;
}

/** The timelines of the keys the window adds to: the changed places of stored memories and every new one's place. */
function placeOnTimelines(
  decisions: Decision[],
  keyMemories: readonly (KeyedMemory & { key: string })[],
): PlaceChange[] {
  const byKey = new Map<string, KeyedMemory[]>();
  const arrival = Math.max(0, ...keyMemories.map((m) => m.arrival)) + 1;
  decisions.forEach((d, i) => {
    if (d.event !== "added" || d.storageKey === null) return;
    const memory: KeyedMemory = {
      id: newRef(i),
      validFrom: validFromOf(d.memory),
      saidAt: Math.max(...d.memory.sources.map((s) => s.createdAt)),
      arrival: arrival + i,
      tier: "active",
      validTo: null,
      supersededBy: null,
    };
    byKey.set(d.storageKey, [
      ...(byKey.get(d.storageKey) ?? keyMemories.filter((m) => m.key === d.storageKey)),
      memory,
    ]);
  });
  const changes: PlaceChange[] = [];
  for (const [key, memories] of byKey) {
    const before = new Map(memories.map((m) => [m.id, m]));
    for (const place of timeline(memories)) {
      const was = before.get(place.id)!;
      const isNew = place.id.startsWith("new:");
      if (!isNew && !moved(was, place)) continue;
      const successor = place.supersededBy === null ? null : before.get(place.supersededBy)!;
      const supersededReason =
        successor === null
          ? null
          : isNew || was.tier !== "superseded"
            ? `a value later in time (valid_from ${day(successor.validFrom)}) holds now`
            : `a value in between (valid_from ${day(successor.validFrom)}) now follows it`;
      changes.push({ ...place, ref: place.id, key, supersededReason });
      if (isNew && successor !== null) {
        const d = decisions[Number(place.id.slice(4))]!;
        if (d.event === "added")
          d.reason = `stored as history: it held from ${day(validFromOf(d.memory))}, before a value of ${key} from ${day(successor.validFrom)}`;
      }
    }
  }
  return changes;
}

/** When a memory became true: its `when`, else its first source turn's time. */
export function validFromOf(memory: ValidMemory): number {
  return memory.when ?? Math.min(...memory.sources.map((s) => s.createdAt));
}

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
