import { IN_JSON, type TenantScope } from "../../db/scope";
import { aliasesOf } from "./aliases";

/** A project's memory settings; null where the project has none of its own. */
export interface ProjectSettings {
  project: string;
  /** Whether logged turns are extracted into memories; null: the deployment's default (EXTRACT_BY_DEFAULT). */
  extract: boolean | null;
  /** The subject whose profile memory_context_build puts first when the query names nobody. */
  defaultSubject: string | null;
  /** Other names of subjects ({"Mel": "Melanie"}), applied before consolidation (aliases.ts). */
  subjectAliases: Record<string, string>;
}

export async function readProjectSettings(scope: TenantScope, project: string): Promise<ProjectSettings> {
  const row = await scope.d1
    .prepare(
      "SELECT extract, default_subject, subject_aliases FROM project_settings WHERE tenant_id = ? AND project = ?",
    )
    .bind(scope.tenantId, project)
    .first<SettingsRow>();
  return settingsOf(project, row);
}

/**
 * Sets what `changes` names (undefined: left as it is; null: back to the default) and answers the result. When the
 * change turns extraction off (`stopsExtraction`), the project's failed windows waiting for a retry are not tried
 * again, in the same batch, each with a `failed` event that says why: off means no more of its turns go to a model.
 * A window failed after the change (a call with `extract: true`) is tried again as usual.
 */
export async function writeProjectSettings(
  scope: TenantScope,
  project: string,
  changes: { extract?: boolean | null; defaultSubject?: string | null },
  stopsExtraction = false,
): Promise<ProjectSettings> {
  const extract = changes.extract === undefined ? undefined : changes.extract === null ? null : changes.extract ? 1 : 0;
  const now = Date.now();
  const write = scope.d1
    .prepare(
      `INSERT INTO project_settings (tenant_id, project, extract, default_subject, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
       ON CONFLICT (tenant_id, project) DO UPDATE SET
         extract = CASE WHEN ?6 THEN excluded.extract ELSE extract END,
         default_subject = CASE WHEN ?7 THEN excluded.default_subject ELSE default_subject END,
         updated_at = excluded.updated_at
       RETURNING extract, default_subject, subject_aliases`,
    )
    .bind(
      scope.tenantId,
      project,
      extract ?? null,
      changes.defaultSubject ?? null,
      now,
      extract === undefined ? 0 : 1,
      changes.defaultSubject === undefined ? 0 : 1,
    );
  const results = await scope.d1.batch<SettingsRow>([
    ...(stopsExtraction ? retriesStopped(scope, project, now) : []),
    write,
  ]);
  return settingsOf(project, results[results.length - 1]!.results[0] ?? null);
}

/**
 * A `failed` event for each of the project's conversation windows waiting for a retry, then their retries cleared.
 * A document's windows go on: a document extracts because its ingest asked, not by the project's setting.
 */
function retriesStopped(scope: TenantScope, project: string, now: number): D1PreparedStatement[] {
  const waiting =
    "tenant_id = ?1 AND project = ?2 AND status = 'failed' AND retry_at IS NOT NULL AND document_id IS NULL";
  return [
    scope.d1
      .prepare(
        `INSERT INTO memory_events (tenant_id, id, project, at, event, memory_id, key, conversation_id, window_id, sources,
           superseded_by, error, reason)
         SELECT tenant_id, ?4 || '-' || lower(hex(randomblob(4))), project, ?3, 'failed', NULL, NULL, conversation_id, id,
           '[]', NULL, NULL, 'extraction was turned off for the project: not tried again'
         FROM extraction_windows WHERE ${waiting}`,
      )
      .bind(scope.tenantId, project, now, now.toString(36)),
    scope.d1.prepare(`UPDATE extraction_windows SET retry_at = NULL WHERE ${waiting}`).bind(scope.tenantId, project),
  ];
}

type SettingsRow = { extract: number | null; default_subject: string | null; subject_aliases: string | null };

function settingsOf(project: string, row: SettingsRow | null): ProjectSettings {
  return {
    project,
    extract: row?.extract == null ? null : row.extract === 1,
    defaultSubject: row?.default_subject ?? null,
    subjectAliases: aliasesOf(row?.subject_aliases ?? null),
  };
}

/** The statement that reads whether each of `projects` extracts (for a write's batch of reads). */
export function extractSettingsStatement(scope: TenantScope, projects: readonly string[]): D1PreparedStatement {
  return scope.d1
    .prepare(
      `SELECT project, extract FROM project_settings WHERE tenant_id = ? AND project ${IN_JSON} AND extract IS NOT NULL`,
    )
    .bind(scope.tenantId, JSON.stringify(projects));
}
