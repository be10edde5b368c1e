import { projectClause, type TenantScope } from "../../db/scope";
import { type DocumentExport, documentLines } from "./export-documents";
import { extractionLines } from "./export-extraction";
import { type ExportLine, exportedProjects, PAGE, paged } from "./export-pages";

/**
 * A tenant's data as NDJSON: a header line, then one line per record. Items carry every field a user
 * gave or the server decided (tier, pin, task, timestamps, GC state, key, validity, and a derived memory's
 * kind, subject and sources); what is derived again on import is left out (token counts, content hashes,
 * chunks, vectors, embed/link marks, memory_sources), and so are API keys and the usage log. A context link
 * to a chunk names the chunk by (item, index), since chunk ids are renumbered by an import. An item's own
 * type travels as `item_type` (`type` names the record). Documents travel with their Markdown (and their originals
 * when asked), their chunks as items that name them. Read page by page, so a tenant of any size streams in bounded
 * memory.
 */

export const EXPORT_FORMAT = "context-edge-export";
/**
 * 2: derived memories' fields, conversations' extraction cursors, project settings, extraction windows and
 * memory events. A version 1 importer refuses it rather than import memories without their provenance.
 * 3: documents, and their chunks' document, page and section.
 */
export const EXPORT_VERSION = 3;
/** Versions an import reads: each is the next without what the next added. */
export const IMPORT_VERSIONS: readonly number[] = [1, 2, 3];

export function exportStream(
  scope: TenantScope,
  project: string | null,
  documents: DocumentExport,
  now = Date.now(),
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const lines = exportLines(scope, project, documents, now);
  return new ReadableStream({
    async pull(controller) {
      const next = await lines.next();
      if (next.done) return controller.close();
      controller.enqueue(encoder.encode(`${JSON.stringify(next.value)}\n`));
    },
  });
}

/** The records in a fixed order (conversations before the messages that need them, items before links). */
export async function* exportLines(
  scope: TenantScope,
  project: string | null,
  documents: DocumentExport,
  now = Date.now(),
): AsyncGenerator<ExportLine> {
  yield {
    type: "header",
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    tenant_id: scope.tenantId,
    project,
    exported_at: new Date(now).toISOString(),
  };
  const where = (column: string) => exportedProjects(scope, project, column);
  const t = scope.tenantId;
  const conv = where("project");
  yield* paged("conversation", (after) =>
    scope.d1
      .prepare(
        `SELECT id, project, summarized_count, summarized_tokens, extracted_count, extracted_tokens, next_position,
           extraction_epoch, extract_due_at, created_at, updated_at FROM conversations
         WHERE tenant_id = ? AND id > ?${conv.sql} ORDER BY id LIMIT ${PAGE}`,
      )
      .bind(t, after?.[0] ?? "", ...conv.params),
  );
  yield* documentLines(scope, project, documents);
  const items = where("project");
  yield* paged(
    "item",
    (after) =>
      scope.d1
        .prepare(
          `SELECT id, project, kind, type AS item_type, conversation_id, position, role, content, tags, importance, metadata, tier, pinned, task_id,
           file_path, line_start, line_end, key, superseded_by, generation, gc_survival_count, created_at, touched_at,
           valid_from, valid_to, memory_kind, subject, said_by, when_precision, sources, document_id, document_page, document_section,
           CASE WHEN conversation_id IS NOT NULL THEN (SELECT substr(c.context, 1, instr(c.context || char(10), char(10)) - 1)
             FROM chunks c WHERE c.tenant_id = items.tenant_id AND c.item_id = items.id AND c.chunk_index = 0) END AS speaker
         FROM items WHERE tenant_id = ? AND id > ?${items.sql} ORDER BY id LIMIT ${PAGE}`,
        )
        .bind(t, after?.[0] ?? "", ...items.params),
    itemLine,
  );
  const summaries = where("c.project");
  yield* paged(
    "summary",
    (after) =>
      scope.d1
        .prepare(
          `SELECT s.conversation_id || ':' || printf('%09d', s.version) AS id, s.conversation_id, s.version, s.summary, s.code_blocks, s.key_insights,
           s.importance_score, s.message_count, s.tokens_used, s.token_limit, s.created_at
         FROM summaries s JOIN conversations c ON c.tenant_id = s.tenant_id AND c.id = s.conversation_id
         WHERE s.tenant_id = ? AND s.conversation_id || ':' || printf('%09d', s.version) > ?${summaries.sql} ORDER BY 1 LIMIT ${PAGE}`,
        )
        .bind(t, after?.[0] ?? "", ...summaries.params),
    ({ id: _, ...row }) => ({
      ...row,
      code_blocks: JSON.parse(row.code_blocks as string),
      key_insights: JSON.parse(row.key_insights as string),
    }),
  );
  const tasks = where("project");
  yield* paged(
    "project_task",
    (after) =>
      scope.d1
        .prepare(
          `SELECT project AS id, project, current_task_id, previous_task_id, updated_at FROM project_tasks WHERE tenant_id = ? AND project > ?${tasks.sql} ORDER BY project LIMIT ${PAGE}`,
        )
        .bind(t, after?.[0] ?? "", ...tasks.params),
    ({ id: _, ...row }) => row,
  );
  yield* paged(
    "link",
    (after) => linkPage(scope, project, after),
    ({ source_chunk, target_chunk, ...row }) => ({
      ...row,
      source_id: source_chunk ? chunkRef(source_chunk as string) : row.source_id,
      target_id: target_chunk ? chunkRef(target_chunk as string) : row.target_id,
      metadata: JSON.parse(row.metadata as string),
    }),
    (row) => LINK_EDGE.map((column) => row[column]),
  );
  yield* extractionLines(scope, project);
}

/**
 * An item's line. Validity appears where it is set (a superseded keyed fact has a valid_to too), and a derived
 * memory's fields only on a derived memory, so the lines of everything else stay as version 1 wrote them. A
 * message's speaker (the first line of its chunk's context, as extraction reads it) appears where its metadata and
 * role would not give it back: memory_ingest keeps it nowhere else.
 */
function itemLine({
  valid_from,
  valid_to,
  memory_kind,
  subject,
  said_by,
  when_precision,
  sources,
  speaker,
  document_id,
  document_page,
  document_section,
  ...row
}: Record<string, unknown>): Record<string, unknown> {
  const metadata = JSON.parse(row.metadata as string) as Record<string, unknown>;
  const impliedSpeaker = typeof metadata.agent_name === "string" ? metadata.agent_name : row.role;
  return {
    ...row,
    tags: JSON.parse(row.tags as string),
    metadata,
    pinned: row.pinned === 1,
    ...(typeof speaker === "string" && speaker !== "" && speaker !== impliedSpeaker ? { speaker } : {}),
    ...(valid_from === null ? {} : { valid_from }),
    ...(valid_to === null ? {} : { valid_to }),
    ...(memory_kind === null
      ? {}
      : { memory_kind, subject, said_by, when_precision, sources: JSON.parse((sources as string | null) ?? "[]") }),
    ...(document_id === null ? {} : { document_id, document_page, document_section }),
  };
}

/** A chunk named by its item and index ("<item id>#<index>"): chunk ids are renumbered by an import. */
function chunkRef(json: string): string {
  const [itemId, index] = JSON.parse(json) as [string, number];
  return `${itemId}#${index}`;
}

/**
 * Links whose ends the export holds: item and conversation ends in the scope (and project), a chunk end
 * as its item and index. A link to something outside (another project) would dangle in the copy.
 */
function linkPage(scope: TenantScope, project: string | null, after: unknown[] | null): D1PreparedStatement {
  const own = projectClause(scope, "n.project");
  const inProject = project === null ? "" : " AND n.project = ?";
  const end = (side: "source" | "target") => `
    CASE WHEN l.${side}_type = 'chunk' THEN (SELECT 1 FROM chunks c JOIN items n ON n.id = c.item_id WHERE c.tenant_id = l.tenant_id AND c.id = CAST(l.${side}_id AS INTEGER)${own.sql}${inProject})
         WHEN l.${side}_type = 'conversation' THEN (SELECT 1 FROM conversations n WHERE n.tenant_id = l.tenant_id AND n.id = l.${side}_id${own.sql}${inProject})
         ELSE (SELECT 1 FROM items n WHERE n.tenant_id = l.tenant_id AND n.id = l.${side}_id${own.sql}${inProject}) END`;
  const endParams = [...own.params, ...(project === null ? [] : [project])];
  const edge = LINK_EDGE.map((column) => `l.${column}`).join(", ");
  const chunkRef = (side: "source" | "target") =>
    `CASE WHEN l.${side}_type = 'chunk' THEN (SELECT json_array(c.item_id, c.chunk_index) FROM chunks c WHERE c.tenant_id = l.tenant_id AND c.id = CAST(l.${side}_id AS INTEGER)) END`;
  return scope.d1
    .prepare(
      `SELECT l.id, l.source_type, l.source_id, ${chunkRef("source")} AS source_chunk, l.target_type, l.target_id, ${chunkRef("target")} AS target_chunk,
         l.relationship_type, l.weight, l.metadata, l.created_at
       FROM links l WHERE l.tenant_id = ?${after === null ? "" : ` AND (${edge}) > (${LINK_EDGE.map(() => "?").join(", ")})`}
         AND ${end("source")} = 1 AND ${end("target")} = 1 ORDER BY ${edge} LIMIT ${PAGE}`,
    )
    .bind(
      scope.tenantId,
      ...(after ?? []),
      ...endParams,
      ...endParams,
      ...endParams,
      ...endParams,
      ...endParams,
      ...endParams,
    );
}

/** A link's edge, unique in its tenant: links are paged along links_edge, which starts with tenant_id. */
const LINK_EDGE = ["source_type", "source_id", "target_type", "target_id", "relationship_type"] as const;
