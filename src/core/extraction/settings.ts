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

/** Sets what `changes` names (undefined: left as it is; null: back to the default) and answers the result. */
export async function writeProjectSettings(
  scope: TenantScope,
  project: string,
  changes: { extract?: boolean | null; defaultSubject?: string | null },
): Promise<ProjectSettings> {
  const extract = changes.extract === undefined ? undefined : changes.extract === null ? null : changes.extract ? 1 : 0;
  const row = await scope.d1
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
      Date.now(),
      extract === undefined ? 0 : 1,
      changes.defaultSubject === undefined ? 0 : 1,
    )
    .first<SettingsRow>();
  return settingsOf(project, row);
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
