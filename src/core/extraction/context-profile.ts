import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import type { TokenCounter } from "../../shared/tokens";
import type { Profile, ProfileEntry } from "./profiles";

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
  const [subjects, settings] = await scope.d1.batch<{ subject: string | null }>([
    scope.d1
      .prepare(
        `SELECT DISTINCT subject FROM items
         WHERE tenant_id = ?${inProjects}${visible.sql} AND memory_kind IS NOT NULL AND tier = 'active' LIMIT 500`,
      )
      .bind(scope.tenantId, ...projectParams, ...visible.params),
    scope.d1
      .prepare("SELECT default_subject AS subject FROM project_settings WHERE tenant_id = ? AND project = ?")
      .bind(scope.tenantId, namespace ?? "default"),
  ]);
  const words = new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  const named = subjects!.results
    .map((r) => r.subject!)
    .filter((s) => {
      const parts = s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
      return parts.length > 0 && parts.every((p) => words.has(p));
    })
    .sort((a, b) => b.length - a.length);
  return named[0] ?? settings!.results[0]?.subject ?? null;
}

const SECTIONS: [keyof Omit<Profile, "subject" | "tokens">, string][] = [
  ["instructions", "Instructions"],
  ["facts", "Facts"],
  ["preferences", "Preferences"],
  ["tasks", "Tasks"],
  ["events", "Recent events"],
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
  const header = `Profile of ${profile.subject}`;
  let lines = [header];
  let best: { content: string; tokens: number } | null = null;
  for (const [field, title] of SECTIONS) {
    const entries: ProfileEntry[] = profile[field];
    if (entries.length === 0) continue;
    let section = [...lines, `${title}:`];
    let added = false;
    for (const entry of entries) {
      const day =
        entry.validFrom !== null && field === "events"
          ? ` (${new Date(entry.validFrom).toISOString().slice(0, 10)})`
          : "";
      const candidate = [...section, `- ${entry.text}${day}`];
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
