import type { TenantScope } from "../../db/scope";
import { foldName } from "../../shared/names";
import type { KnownSubject } from "./contract";
import { ownKey } from "./known-memories";
import type { Window } from "./windows";

/** Most subjects a prompt lists keys for, and most keys for one: enough to reuse keys, bounded in tokens. */
const SUBJECTS_LISTED = 12;
const KEYS_LISTED = 30;
/** Most names of the window looked up as subjects. */
const CANDIDATES = 60;

/** What the model is told before it reads a window, and the project's aliases applied after it answers. */
export interface PromptKnowledge {
  /** Whether the window is already recorded (done or failed): a redelivered job skips it. */
  seen: boolean;
  known: KnownSubject[];
  /** Alias (folded) to the subject it names. */
  aliases: Map<string, string>;
}

/**
 * In one round trip: whether the window is recorded, the project's subject aliases, and the keys that the window's
 * subjects already hold (its speakers and the names its turns mention, aliases resolved), so that the model reuses
 * `employer` instead of inventing `workplace`.
 */
export async function readPromptKnowledge(
  scope: TenantScope,
  project: string,
  window: Window,
): Promise<PromptKnowledge> {
  const names = candidateNames(window);
  const [seen, settings, keys] = await scope.d1.batch<Record<string, string | null>>([
    scope.d1
      .prepare("SELECT status FROM extraction_windows WHERE tenant_id = ? AND id = ?")
      .bind(scope.tenantId, window.id),
    scope.d1
      .prepare("SELECT subject_aliases FROM project_settings WHERE tenant_id = ? AND project = ?")
      .bind(scope.tenantId, project),
    scope.d1
      .prepare(
        // The window's names, and the subjects that aliases among them name.
        `SELECT MIN(subject) AS subject, subject_key, key, MAX(created_at) AS latest FROM items
         WHERE tenant_id = ?1 AND project = ?2 AND memory_kind IS NOT NULL AND key IS NOT NULL AND tier <> 'superseded'
           AND (subject_key IN (SELECT value FROM json_each(?3)) OR subject_key IN (
             SELECT a.value ->> 3 FROM project_settings ps, json_each(COALESCE(ps.subject_aliases, '[]')) a
             WHERE ps.tenant_id = ?1 AND ps.project = ?2 AND a.value ->> 2 IN (SELECT value FROM json_each(?3))))
         GROUP BY subject_key, key ORDER BY latest DESC LIMIT 400`,
      )
      .bind(scope.tenantId, project, JSON.stringify([...names])),
  ]);
  const aliases = parseAliases(settings!.results[0]?.subject_aliases ?? null);
  const wanted = new Set([...names].map((n) => (aliases.has(n) ? foldName(aliases.get(n)!) : n)));
  const bySubject = new Map<string, KnownSubject>();
  for (const row of keys!.results) {
    const folded = row.subject_key!;
    if (!wanted.has(folded)) continue;
    const entry = bySubject.get(folded) ?? { subject: row.subject!, keys: [] };
    if (entry.keys.length < KEYS_LISTED) entry.keys.push(ownKey(row.key!));
    bySubject.set(folded, entry);
  }
  return { seen: seen!.results.length > 0, known: [...bySubject.values()].slice(0, SUBJECTS_LISTED), aliases };
}

/**
 * A project's aliases as stored: [alias, subject, alias folded, subject folded] each, so that SQL can match them
 * folded (SQLite's lower() folds ASCII only).
 */
export type StoredAlias = [alias: string, subject: string, aliasKey: string, subjectKey: string];

export function storedAliases(aliases: Readonly<Record<string, string>>): StoredAlias[] {
  return Object.entries(aliases).map(([alias, subject]) => [alias, subject, foldName(alias), foldName(subject)]);
}

/** The aliases a project's settings hold: each alias, folded, to the subject it names. */
export function parseAliases(json: string | null): Map<string, string> {
  if (!json) return new Map();
  return new Map((JSON.parse(json) as StoredAlias[]).map(([, subject, aliasKey]) => [aliasKey, subject]));
}

/** Names a window may be about, folded: its speakers, and its capitalised words alone and in pairs. */
function candidateNames(window: Window): Set<string> {
  const names = new Set<string>();
  for (const turn of [...window.context, ...window.turns]) {
    names.add(foldName(turn.speaker));
    const words = turn.content.match(/\p{Lu}[\p{L}\p{M}'’-]*/gu) ?? [];
    words.forEach((word, i) => {
      names.add(foldName(word.replace(/['’]s$/u, "")));
      if (i > 0) names.add(foldName(`${words[i - 1]} ${word}`));
    });
    if (names.size >= CANDIDATES) break;
  }
  return new Set([...names].slice(0, CANDIDATES));
}
