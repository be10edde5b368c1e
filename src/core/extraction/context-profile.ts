import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import { foldName } from "../../shared/names";
import type { TokenCounter } from "../../shared/tokens";
import type { Profile, ProfileEntry } from "./profiles";
import { parseAliases } from "./prompt-knowledge";

/**
 * The subject whose profile a context should open with: one the query names (a subject with memories whose name is
 * a word of the query), else the project's default subject; null when neither. One round trip (two statements).
 */
export async function subjectForQuery(
  scope: TenantScope,
  projects: readonly string[] | undefined,
  namespace: string | null,
  query: string,
): Promise<string | null> {
  const visible = projectClause(scope, "project");
  const inProjects = projects === undefined ? "" : ` AND project ${IN_JSON}`;
  const projectParams = projects === undefined ? [] : [JSON.stringify(projects)];
  const [subjects, settings] = await scope.d1.batch<{ subject: string | null; subject_aliases?: string | null }>([
    scope.d1
      .prepare(
        `SELECT DISTINCT subject FROM items
         WHERE tenant_id = ?${inProjects}${visible.sql} AND memory_kind IS NOT NULL AND tier = 'active' LIMIT 500`,
      )
      .bind(scope.tenantId, ...projectParams, ...visible.params),
    scope.d1
      .prepare(
        "SELECT default_subject AS subject, subject_aliases FROM project_settings WHERE tenant_id = ? AND project = ?",
      )
      .bind(scope.tenantId, namespace ?? "default"),
  ]);
  const words = new Set(foldName(query).match(/[\p{L}\p{M}\p{N}]+/gu) ?? []);
  const names = (s: string) => foldName(s).match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
  // A subject by its own name, or by an alias the project gave it ("Mel" for Melanie).
  const aliases = parseAliases(settings!.results[0]?.subject_aliases ?? null);
  const named = [
    ...subjects!.results.map((r) => ({ name: r.subject!, subject: r.subject! })),
    ...[...aliases].map(([alias, subject]) => ({ name: alias, subject })),
  ]
    .filter(({ name }) => {
      const parts = names(name);
      return parts.length > 0 && parts.every((p) => words.has(p));
    })
    .sort((a, b) => b.name.length - a.name.length);
  return named[0]?.subject ?? settings!.results[0]?.subject ?? null;
}

/**
 * Sections in the order a budget is spent on them. Instructions are the user's stated wishes, reported as what they
 * said, never as directions of the context's own: the reader decides what to do with them.
 */
const SECTIONS: [keyof Omit<Profile, "subject" | "tokens">, (subject: string) => string][] = [
  ["instructions", (subject) => `What ${subject} asked of the assistant (their own words, reported):`],
  ["facts", () => "Facts:"],
  ["preferences", () => "Preferences:"],
  ["tasks", () => "Tasks:"],
  ["events", () => "Recent events:"],
];

/**
 * A profile as context text, within `maxTokens` of the counter's encoding (exactly counted): entries are taken in
 * the profile's order until the next would not fit.
 */
export function renderProfile(
  profile: Profile,
  maxTokens: number,
  counter: TokenCounter,
): { content: string; tokens: number } | null {
  const header = `Profile of ${profile.subject} (remembered from conversations, as data)`;
  let lines = [header];
  let best: { content: string; tokens: number } | null = null;
  for (const [field, title] of SECTIONS) {
    const entries: ProfileEntry[] = profile[field];
    if (entries.length === 0) continue;
    let section = [...lines, title(profile.subject)];
    let added = false;
    for (const entry of entries) {
      const day = field === "events" && entry.validFrom !== null ? ` (${whenOf(entry)})` : "";
      const said = entry.saidBy === null ? "" : ` (said by the ${entry.saidBy})`;
      const text = field === "instructions" ? `"${entry.text}"` : entry.text;
      const candidate = [...section, `- ${text}${day}${said}`];
      const content = candidate.join("\n");
      const tokens = counter.count(content);
      if (tokens > maxTokens) break;
      section = candidate;
      best = { content, tokens };
      added = true;
    }
    if (added) lines = section;
  }
  return best;
}

/** An entry's time as precisely as it was given: 2023-05-07, 2023-05 or 2023. */
export function whenOf(entry: Pick<ProfileEntry, "validFrom" | "whenPrecision">): string {
  const day = new Date(entry.validFrom!).toISOString();
  return entry.whenPrecision === "year"
    ? day.slice(0, 4)
    : entry.whenPrecision === "month"
      ? day.slice(0, 7)
      : day.slice(0, 10);
}
