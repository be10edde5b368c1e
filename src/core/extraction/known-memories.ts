import { IN_JSON, type TenantScope } from "../../db/scope";
import { foldName, nameSlug } from "../../shared/names";
import type { KeyedMemory } from "./timeline";

/** Most current memories of the window's subjects read to compare against (newest first). */
const EXISTING_READ = 500;
/** Most memories of the window's keys read to place new values on their timelines (latest in time first). */
const KEYED_READ = 500;

/** A current derived memory of one of the window's subjects, as consolidation compares against it. */
export interface ExistingMemory {
  id: string;
  subject: string;
  kind: string;
  key: string | null;
  content: string;
  validFrom: number | null;
  /** Its `when` was given (an event's day): memories of other days are other events. */
  dated: boolean;
  sources: string[];
}

/** The key a derived memory is stored under: its subject's and its own, so two people's home cities do not meet. */
export function storageKey(subject: string, key: string | null): string | null {
  if (key === null) return null;
  return `${nameSlug(subject) || "someone"}.${key}`;
}

/** The key's own part of a storage key (caroline.home_city: home_city). */
export function ownKey(stored: string): string {
  return stored.slice(stored.indexOf(".") + 1);
}

/**
 * The current derived memories of these subjects (compared folded, in any script), and every memory of these keys
 * with what its timeline needs, in one round trip.
 */
export async function readExisting(
  scope: TenantScope,
  project: string,
  subjects: readonly string[],
  keys: readonly string[],
): Promise<{ memories: ExistingMemory[]; keyed: (KeyedMemory & { key: string })[] }> {
  const [memories, keyed] = await scope.d1.batch<Record<string, string | number | null>>([
    scope.d1
      .prepare(
        `SELECT id, subject, memory_kind, key, content, valid_from, when_precision, sources FROM items
         WHERE tenant_id = ? AND project = ? AND memory_kind IS NOT NULL AND subject_key ${IN_JSON}
           AND tier <> 'superseded'
         ORDER BY created_at DESC LIMIT ?`,
      )
      .bind(scope.tenantId, project, JSON.stringify([...new Set(subjects.map(foldName))]), EXISTING_READ),
    scope.d1
      .prepare(
        `SELECT ${KEYED_COLUMNS}
         FROM items i WHERE i.tenant_id = ? AND i.project = ? AND i.key ${IN_JSON}
         ORDER BY valid_from DESC LIMIT ?`,
      )
      .bind(scope.tenantId, project, JSON.stringify([...new Set(keys)]), KEYED_READ),
  ]);
  return {
    memories: memories!.results.map((r) => ({
      id: r.id as string,
      subject: r.subject as string,
      kind: r.memory_kind as string,
      key: (r.key as string | null) ?? null,
      content: r.content as string,
      validFrom: (r.valid_from as number | null) ?? null,
      dated: r.when_precision !== null,
      sources: JSON.parse((r.sources as string | null) ?? "[]") as string[],
    })),
    keyed: keyed!.results.map(keyedMemory),
  };
}

/**
 * A keyed memory's columns as its timeline needs them (items aliased `i`): valid_from (its write time for an item
 * stored as given), its latest source turn's time (said_at), and its rowid for the order of arrival.
 */
export const KEYED_COLUMNS = `i.id, i.key, i.subject_key, i.tier, COALESCE(i.valid_from, i.created_at) AS valid_from,
  i.valid_to, i.superseded_by, i.rowid AS seq,
  COALESCE((SELECT MAX(s.created_at) FROM items s
            WHERE s.tenant_id = i.tenant_id AND s.id IN (SELECT value FROM json_each(COALESCE(i.sources, '[]')))),
           i.created_at) AS said_at`;

/** A row of KEYED_COLUMNS as a memory of its key's timeline. */
export function keyedMemory(r: Record<string, string | number | null>): KeyedMemory & { key: string } {
  return {
    id: r.id as string,
    key: r.key as string,
    tier: r.tier as string,
    validFrom: r.valid_from as number,
    validTo: (r.valid_to as number | null) ?? null,
    supersededBy: (r.superseded_by as string | null) ?? null,
    saidAt: r.said_at as number,
    arrival: r.seq as number,
  };
}
