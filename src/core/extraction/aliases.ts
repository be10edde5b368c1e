import { IN_JSON, type TenantScope } from "../../db/scope";
import { invalidParameter } from "../../errors";
import { foldName, nameSlug } from "../../shared/names";
import { recordEvents } from "./events";
import { KEYED_COLUMNS, keyedMemory, ownKey } from "./known-memories";
import { storedAliases } from "./prompt-knowledge";
import { type KeyedMemory, moved, timeline } from "./timeline";
import { placesStatement } from "./window-records";

/** Most aliases a project holds. */
export const MAX_ALIASES = 100;
/** Most keyed memories one change of aliases re-places on their timelines. */
const KEYED_READ = 2_000;

/**
 * Sets a project's subject aliases ({"Mel": "Melanie"}: extraction files what it learns about Mel under Melanie, and
 * memory_profile answers "Mel" with Melanie's profile). Each alias must name a subject the project has memories
 * of, be no subject's own alias target, and differ from its subject. The memories already stored under an alias
 * move to its subject in the same batch, and every key both held is put back in time order (timeline.ts), with an
 * event for each memory that stops holding. An empty object clears the aliases (memories that moved stay moved).
 */
export async function setSubjectAliases(
  scope: TenantScope,
  project: string,
  aliases: Readonly<Record<string, string>>,
): Promise<void> {
  const entries = Object.entries(aliases);
  if (entries.length > MAX_ALIASES)
    throw invalidParameter(
      "subject_aliases",
      `subject_aliases holds at most ${MAX_ALIASES} aliases; got ${entries.length}`,
    );
  const targets = new Set(entries.map(([, subject]) => foldName(subject)));
  for (const [alias, subject] of entries) {
    if (foldName(alias) === foldName(subject))
      throw invalidParameter("subject_aliases", `subject_aliases: '${alias}' is the subject's own name, not an alias`);
    if (targets.has(foldName(alias)))
      throw invalidParameter(
        "subject_aliases",
        `subject_aliases: '${alias}' is both an alias and a subject aliases name; point every alias at the subject itself`,
      );
  }
  const folded = [...new Set(entries.flatMap(([alias, subject]) => [foldName(alias), foldName(subject)]))];
  const [subjects, keyed] = await scope.d1.batch<Record<string, string | number | null>>([
    scope.d1
      .prepare(
        `SELECT subject_key, MIN(subject) AS subject FROM items
         WHERE tenant_id = ? AND project = ? AND memory_kind IS NOT NULL AND tier <> 'superseded'
         GROUP BY subject_key ORDER BY COUNT(*) DESC LIMIT 500`,
      )
      .bind(scope.tenantId, project),
    scope.d1
      .prepare(
        `SELECT ${KEYED_COLUMNS}
         FROM items i WHERE i.tenant_id = ? AND i.project = ? AND i.memory_kind IS NOT NULL AND i.key IS NOT NULL
           AND i.subject_key ${IN_JSON} LIMIT ?`,
      )
      .bind(scope.tenantId, project, JSON.stringify(folded), KEYED_READ),
  ]);
  const known = new Map(subjects!.results.map((r) => [r.subject_key as string, r.subject as string]));
  for (const [alias, subject] of entries) {
    if (!known.has(foldName(subject)))
      throw invalidParameter(
        "subject_aliases",
        `subject_aliases: '${alias}' names '${subject}', who has no memories in project '${project}'; subjects with memories: ${
          [...known.values()].slice(0, 20).join(", ") || "none yet"
        }`,
        { alias, subject },
      );
  }
  const moves = entries.map(([alias, subject]) => ({ from: foldName(alias), to: subject }));
  const statements = [
    scope.d1
      .prepare(
        `INSERT INTO project_settings (tenant_id, project, subject_aliases, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (tenant_id, project) DO UPDATE SET subject_aliases = excluded.subject_aliases, updated_at = excluded.updated_at`,
      )
      .bind(scope.tenantId, project, entries.length === 0 ? null : JSON.stringify(storedAliases(aliases)), Date.now()),
    ...moves.map(({ from, to }) =>
      scope.d1
        .prepare(
          `UPDATE items SET subject = ?4, subject_key = ?5,
             key = CASE WHEN key IS NULL THEN NULL ELSE ?6 || substr(key, instr(key, '.')) END
           WHERE tenant_id = ?1 AND project = ?2 AND memory_kind IS NOT NULL AND subject_key = ?3`,
        )
        .bind(scope.tenantId, project, from, to, foldName(to), nameSlug(to) || "someone"),
    ),
    ...retimed(scope, project, moves, keyed!.results),
  ];
  await scope.d1.batch(statements);
}

/** The aliases a project holds, as given ({"Mel": "Melanie"}). */
export function aliasesOf(json: string | null): Record<string, string> {
  if (!json) return {};
  return Object.fromEntries((JSON.parse(json) as [string, string][]).map(([alias, subject]) => [alias, subject]));
}

/** The keys that memories moved into, back in time order; an event for each memory that stops holding. */
function retimed(
  scope: TenantScope,
  project: string,
  moves: readonly { from: string; to: string }[],
  rows: readonly Record<string, string | number | null>[],
): D1PreparedStatement[] {
  const target = new Map(moves.map((m) => [m.from, m.to]));
  const byKey = new Map<string, KeyedMemory[]>();
  const movedKeys = new Set<string>();
  for (const r of rows) {
    const to = target.get(r.subject_key as string);
    const key = to === undefined ? (r.key as string) : `${nameSlug(to) || "someone"}.${ownKey(r.key as string)}`;
    if (to !== undefined) movedKeys.add(key);
    byKey.set(key, [...(byKey.get(key) ?? []), keyedMemory(r)]);
  }
  const places: { id: string; tier: string; validTo: number | null; supersededBy: string | null }[] = [];
  const events = [];
  const now = Date.now();
  for (const key of movedKeys) {
    const memories = byKey.get(key)!;
    const before = new Map(memories.map((m) => [m.id, m]));
    for (const place of timeline(memories)) {
      const was = before.get(place.id)!;
      if (!moved(was, place)) continue;
      places.push(place);
      if (was.tier !== "superseded" && place.supersededBy !== null)
        events.push({
          event: "superseded" as const,
          memoryId: place.id,
          key,
          sources: [],
          error: null,
          supersededBy: place.supersededBy,
          reason: "an alias joined two subjects' values of this key; the later one in time holds",
        });
    }
  }
  return [
    ...placesStatement(scope, places),
    ...recordEvents(scope, { project, conversationId: null }, null, now, events),
  ];
}
