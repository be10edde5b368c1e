import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import { notFound } from "../../errors";
import { foldName } from "../../shared/names";
import type { MemoryKind, SaidBy, WhenPrecision } from "../memory/item-types";

/** A memory as a profile lists it. */
export interface ProfileEntry {
  id: string;
  text: string;
  key: string | null;
  validFrom: number | null;
  /** How much of its `when` was given (day, month, year); null: none was. */
  whenPrecision: WhenPrecision | null;
  /** Who said what it rests on when no user or system turn did (a fact the assistant stated); null: the user. */
  saidBy: SaidBy | null;
  sources: string[];
  tokens: number;
}

export interface Profile {
  subject: string;
  facts: ProfileEntry[];
  preferences: ProfileEntry[];
  instructions: ProfileEntry[];
  tasks: ProfileEntry[];
  events: ProfileEntry[];
  /** Tokens of the entries' texts together. */
  tokens: number;
}

/** What holds now: current memories (planned events and tasks included). */
const NOW = "tier = 'active' AND valid_to IS NULL";
/** What held at an instant: known by then (valid_from) and not yet replaced (valid_to), superseded ones included. */
const AS_OF = "tier IN ('active', 'superseded') AND (valid_to IS NULL OR valid_to > ?) AND valid_from <= ?";
/** Only a user's (or system's) word is an instruction or preference: one an assistant or tool stated is left out. */
const OWN_WISHES = "NOT (memory_kind IN ('instruction', 'preference') AND said_by IS NOT NULL)";
/** The subject asked for, or the subject an alias of the project names (settings.ts). */
const SUBJECT = `(subject_key = ?1 OR subject_key IN (
  SELECT a.value ->> 3 FROM project_settings ps, json_each(COALESCE(ps.subject_aliases, '[]')) a
  WHERE ps.tenant_id = items.tenant_id AND ps.project = items.project AND a.value ->> 2 = ?1))`;

/** Most memories one profile read considers; a budget of a few thousand tokens never needs more. */
const PROFILE_READ = 400;

/** In this order a budget is spent: how to behave first, then what holds, then likes, to-dos, and recent events. */
const ORDER: readonly MemoryKind[] = ["instruction", "fact", "preference", "task", "event"];

/**
 * A subject's profile from stored memories, in one D1 round trip and with no model call: what is true now (or at
 * `asOf`), grouped by kind, the newest first within each, bounded to `maxTokens` (instructions first, events last).
 * NOT_FOUND, naming the subjects there are, when nothing is stored about the subject.
 */
export async function readProfile(
  scope: TenantScope,
  projects: readonly string[] | null,
  subject: string,
  maxTokens: number,
  asOf: number | null = null,
): Promise<Profile> {
  const filter = projectFilter(scope, projects);
  const { results } = await scope.d1
    .prepare(
      `SELECT id, subject, memory_kind, key, content, tokens, valid_from, when_precision, said_by, sources FROM items
       WHERE tenant_id = ?2${filter.sql} AND memory_kind IS NOT NULL AND ${SUBJECT} AND ${OWN_WISHES}
         AND ${asOf === null ? NOW : AS_OF}
       ORDER BY valid_from DESC, created_at DESC LIMIT ?`,
    )
    .bind(foldName(subject), scope.tenantId, ...filter.params, ...(asOf === null ? [] : [asOf, asOf]), PROFILE_READ)
    .all<{
      id: string;
      subject: string;
      memory_kind: MemoryKind;
      key: string | null;
      content: string;
      tokens: number;
      valid_from: number | null;
      when_precision: WhenPrecision | null;
      said_by: SaidBy | null;
      sources: string | null;
    }>();
  if (results.length === 0) {
    const known = await listSubjects(scope, projects);
    throw notFound(
      `No memories about '${subject}'${
        known.length > 0
          ? `; subjects with memories: ${known
              .slice(0, 20)
              .map((s) => s.subject)
              .join(", ")}`
          : "; nothing has been extracted yet"
      }`,
      { parameter: "subject", subject },
    );
  }
  const profile: Profile = {
    subject: results[0]!.subject,
    facts: [],
    preferences: [],
    instructions: [],
    tasks: [],
    events: [],
    tokens: 0,
  };
  const groups: Record<MemoryKind, ProfileEntry[]> = {
    fact: profile.facts,
    preference: profile.preferences,
    instruction: profile.instructions,
    task: profile.tasks,
    event: profile.events,
  };
  for (const kind of ORDER) {
    for (const r of results) {
      if (r.memory_kind !== kind || profile.tokens + r.tokens > maxTokens) continue;
      groups[kind].push({
        id: r.id,
        text: r.content,
        key: r.key,
        validFrom: r.valid_from,
        whenPrecision: r.when_precision,
        saidBy: r.said_by,
        sources: JSON.parse(r.sources ?? "[]") as string[],
        tokens: r.tokens,
      });
      profile.tokens += r.tokens;
    }
  }
  return profile;
}

/** Subjects with current memories in these projects, the most remembered first. */
export async function listSubjects(
  scope: TenantScope,
  projects: readonly string[] | null,
): Promise<{ subject: string; memories: number }[]> {
  const filter = projectFilter(scope, projects);
  const { results } = await scope.d1
    .prepare(
      `SELECT MIN(subject) AS subject, COUNT(*) AS memories FROM items
       WHERE tenant_id = ?${filter.sql} AND memory_kind IS NOT NULL AND tier = 'active' AND valid_to IS NULL
       GROUP BY subject_key ORDER BY memories DESC, subject LIMIT 200`,
    )
    .bind(scope.tenantId, ...filter.params)
    .all<{ subject: string; memories: number }>();
  return results;
}

/** Projects as a filter (null: every project), always within the projects the scope may see. */
function projectFilter(scope: TenantScope, projects: readonly string[] | null): { sql: string; params: string[] } {
  const visible = projectClause(scope, "project");
  if (projects === null) return visible;
  return { sql: ` AND project ${IN_JSON}${visible.sql}`, params: [JSON.stringify(projects), ...visible.params] };
}
