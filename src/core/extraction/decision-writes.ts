import type { TenantScope } from "../../db/scope";
import { setSourcesStatement } from "../memory/derived";
import type { NewItem, WrittenItem } from "../memory/item-types";
import { type Consolidation, type Decision, type MemoryRef, newRef, validFromOf } from "./consolidate";
import type { MemoryEvent } from "./events";
import type { ExistingMemory } from "./known-memories";

// What a window's decisions write: the new memories as items, their provenance, their places on their keys'
// timelines, and an event for each decision with its reason.

/** The items the added memories become (a duplicate of one added in this window lends it its sources). */
export function newItems(decisions: readonly Decision[], project: string): { decision: number; item: NewItem }[] {
  const extraSources = new Map<number, string[]>();
  decisions.forEach((d) => {
    if (d.event === "duplicate" && "decision" in d.of)
      extraSources.set(d.of.decision, [
        ...(extraSources.get(d.of.decision) ?? []),
        ...d.memory.sources.map((s) => s.id),
      ]);
  });
  return decisions.flatMap((d, i) => {
    if (d.event !== "added") return [];
    const m = d.memory;
    const sources = [...new Set([...m.sources.map((s) => s.id), ...(extraSources.get(i) ?? [])])];
    const item: NewItem = {
      project,
      kind: "memory",
      type: m.kind === "task" ? "task" : "note",
      content: m.text,
      key: d.storageKey,
      derived: {
        kind: m.kind,
        subject: m.subject,
        validFrom: validFromOf(m),
        sources,
        whenPrecision: m.whenPrecision,
        saidBy: m.saidBy,
      },
    };
    return [{ decision: i, item }];
  });
}

/**
 * The decisions as written: an added memory whose write found the same text under the same key already stored
 * (an item stored as given, memory_store) is a duplicate of that item, which keeps no sources. Returns the decisions
 * and each one's memory id (a new item's, or the one it repeats).
 */
export function asWritten(
  consolidation: Consolidation,
  toWrite: readonly { decision: number }[],
  results: readonly WrittenItem[],
): { decisions: Decision[]; ids: (string | null)[]; resolve: (ref: MemoryRef) => string } {
  const written = new Map(toWrite.map((w, at) => [w.decision, results[at]!]));
  const decisions = consolidation.decisions.map((d, i): Decision => {
    const same = written.get(i)?.duplicateOf ?? null;
    return same === null
      ? d
      : { event: "duplicate", memory: d.memory, of: { id: same }, reason: "the same text as an item stored as given" };
  });
  const ids = consolidation.decisions.map((_, i) => written.get(i)?.id ?? null);
  const resolve = (ref: MemoryRef) => (ref.startsWith("new:") ? ids[Number(ref.slice(4))]! : ref);
  return { decisions, ids, resolve };
}

/** Each memory's sources indexed by source, and an existing memory's sources grown by its duplicate's. */
export function provenance(
  scope: TenantScope,
  decisions: readonly Decision[],
  ids: readonly (string | null)[],
  existing: readonly ExistingMemory[],
  derivedIds: ReadonlySet<string>,
): D1PreparedStatement[] {
  const pairs: [string, string][] = [];
  const grown = new Map<string, Set<string>>();
  decisions.forEach((d, i) => {
    const sources = d.memory.sources.map((s) => s.id);
    const memoryId = d.event === "added" ? ids[i]! : "id" in d.of ? d.of.id : ids[d.of.decision]!;
    // Only a derived memory has sources: an item stored as given never goes with a turn.
    if (!derivedIds.has(memoryId)) return;
    for (const source of sources) pairs.push([source, memoryId]);
    if (d.event === "duplicate" && "id" in d.of) {
      const of = d.of.id;
      const current = grown.get(of) ?? new Set(existing.find((e) => e.id === of)?.sources ?? []);
      for (const source of sources) current.add(source);
      grown.set(of, current);
    }
  });
  const statements: D1PreparedStatement[] = [];
  if (pairs.length > 0) {
    statements.push(
      scope.d1
        .prepare(
          `INSERT OR IGNORE INTO memory_sources (tenant_id, source_id, memory_id)
           SELECT ?1, j.value ->> 0, j.value ->> 1 FROM json_each(?2) j`,
        )
        .bind(scope.tenantId, JSON.stringify(pairs)),
    );
  }
  if (grown.size > 0) {
    statements.push(
      setSourcesStatement(
        scope,
        [...grown].map(([id, sources]) => ({ id, sources })),
      ),
    );
  }
  return statements;
}

/** One event per decision, with its reason, and one per memory whose place on its key's timeline moved. */
export function decisionEvents(
  decisions: readonly Decision[],
  ids: readonly (string | null)[],
  places: Consolidation["places"],
  resolve: (ref: MemoryRef) => string,
): MemoryEvent[] {
  const events = decisions.map((d, i): MemoryEvent => {
    const sources = d.memory.sources.map((s) => s.id);
    const mended = d.memory.mended.length > 0 ? `mended: ${d.memory.mended.join("; ")}` : null;
    if (d.event === "duplicate") {
      const memoryId = "id" in d.of ? d.of.id : ids[d.of.decision]!;
      return { event: "duplicate", memoryId, key: null, sources, error: null, reason: join(d.reason, mended) };
    }
    const said = d.memory.saidBy ? `said by the ${d.memory.saidBy}, not the user` : null;
    return {
      event: "added",
      memoryId: ids[i]!,
      key: d.storageKey,
      sources,
      error: null,
      reason: join(d.reason, said, mended),
    };
  });
  for (const place of places) {
    if (place.supersededReason === null || place.supersededBy === null) continue;
    const by = place.supersededBy.startsWith("new:") ? decisions[Number(place.supersededBy.slice(4))] : undefined;
    events.push({
      event: "superseded",
      memoryId: resolve(place.ref),
      key: place.key,
      sources: by ? by.memory.sources.map((s) => s.id) : [],
      error: null,
      supersededBy: resolve(place.supersededBy),
      reason: place.supersededReason,
    });
  }
  return events;
}

/** The places as item rows: refs resolved to ids (a memory written as a duplicate stands for the one it repeats). */
export function placedItems(
  places: Consolidation["places"],
  resolve: (ref: MemoryRef) => string,
  decisions: readonly Decision[],
): { id: string; tier: string; validTo: number | null; supersededBy: string | null }[] {
  const unwritten = new Set(decisions.flatMap((d, i) => (d.event === "duplicate" ? [newRef(i)] : [])));
  return places
    .filter((p) => !unwritten.has(p.ref))
    .map((p) => ({
      id: resolve(p.ref),
      tier: p.tier,
      validTo: p.validTo,
      supersededBy: p.supersededBy === null ? null : resolve(p.supersededBy),
    }));
}

function join(...parts: (string | null)[]): string | null {
  const present = parts.filter((p): p is string => p !== null);
  return present.length > 0 ? present.join("; ") : null;
}
