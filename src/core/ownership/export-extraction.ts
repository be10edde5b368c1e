import type { TenantScope } from "../../db/scope";
import { aliasesOf } from "../extraction/aliases";
import { type ExportLine, exportedProjects, PAGE, paged } from "./export-pages";

/**
 * Extraction's own records (docs/extraction.md): each project's settings, every window extraction read (with its
 * cost, so memory_history shows it on the window's events) and every decision it made. Ids stay as they are: they
 * are unique within a tenant only, and an import names them in its tenant.
 */
export async function* extractionLines(scope: TenantScope, project: string | null): AsyncGenerator<ExportLine> {
  const t = scope.tenantId;
  const where = exportedProjects(scope, project, "project");
  yield* paged(
    "project_settings",
    (after) =>
      scope.d1
        .prepare(
          `SELECT project AS id, project, extract, default_subject, subject_aliases, updated_at FROM project_settings
           WHERE tenant_id = ? AND project > ?${where.sql} ORDER BY project LIMIT ${PAGE}`,
        )
        .bind(t, after?.[0] ?? "", ...where.params),
    ({ id: _, ...row }) => ({
      ...row,
      extract: row.extract === null ? null : row.extract === 1,
      // As the tool gives them ({"Mel": "Melanie"}), not as stored (with their folded forms).
      subject_aliases: row.subject_aliases === null ? null : aliasesOf(row.subject_aliases as string),
    }),
  );
  yield* paged("extraction_window", (after) =>
    scope.d1
      .prepare(
        `SELECT id, project, conversation_id, document_id, first_position, last_position, status, calls, model, tokens_in,
           tokens_out, neurons, latency_ms, turns, error, created_at, attempts, retry_at
         FROM extraction_windows WHERE tenant_id = ? AND id > ?${where.sql} ORDER BY id LIMIT ${PAGE}`,
      )
      .bind(t, after?.[0] ?? "", ...where.params),
  );
  yield* paged(
    "memory_event",
    (after) =>
      scope.d1
        .prepare(
          `SELECT id, project, at, event, memory_id, key, conversation_id, document_id, window_id, sources, superseded_by,
             error, reason
           FROM memory_events WHERE tenant_id = ? AND id > ?${where.sql} ORDER BY id LIMIT ${PAGE}`,
        )
        .bind(t, after?.[0] ?? "", ...where.params),
    (row) => ({ ...row, sources: JSON.parse(row.sources as string) }),
  );
}
