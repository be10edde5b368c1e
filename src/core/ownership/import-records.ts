import { sha256Hex } from "../../crypto";
import { IN_JSON, projectClause, scopeAllowsProject, type TenantScope } from "../../db/scope";
import { AppError, permissionDenied } from "../../errors";
import type { Services } from "../../ports";
import { bumpCacheGenerations } from "../context/cache-generation";
import { countKeywordChunks } from "../keyword-index/indexing";
import { type ChunkRow, chunkRow, insertChunkRows } from "../memory/chunk-rows";
import { chunkText } from "../memory/chunking";
import { chunkContext, queueEmbedding, withHeadings } from "../memory/items";
import { checkStorageQuotas, tenantLimits } from "../tenants/quotas";
import { chunkPlace, dedupeInput, planDocuments, writeDocuments } from "./import-documents";
import { derivedColumns, extractionStatements, provenanceStatements } from "./import-extraction";
import { linkStatements } from "./import-links";
import { ITEMS_PER_BATCH, planItems } from "./import-plan";
import type { ImportRecords, ItemRecord } from "./import-schemas";

/** Records that are written as they are, or skipped when their row is there already. */
const KEPT = [
  "summaries",
  "links",
  "project_tasks",
  "project_settings",
  "extraction_windows",
  "memory_events",
  "documents",
] as const;
type Kept = (typeof KEPT)[number];

export interface ImportSummary {
  format: string;
  imported: Record<"items" | "conversations" | Kept, number>;
  skipped: Record<"items" | Kept, number>;
}

/**
 * Item and link ids are unique across tenants, so an import gives each a deterministic id of its own:
 * the source id with a suffix naming the target tenant (a suffix from an earlier import is replaced).
 * Importing the same file twice therefore finds its rows and adds nothing, and an export of the copy
 * equals the original once the tenant and this suffix are taken out.
 */
export async function importedIdMaker(tenantId: string): Promise<(id: string) => string> {
  const tag = (await sha256Hex(`import:${tenantId}`)).slice(0, 8);
  return (id) => `${id.replace(/~[0-9a-f]{8}$/, "")}~${tag}`;
}

/**
 * Writes validated records (import-lines) into the scope's tenant: items are chunked, counted with
 * this deployment's encoding, keyword-indexed and queued for embedding; derived memories keep their
 * fields and get their provenance rows; conversations get their counts from their messages and keep
 * their extraction cursor; rows already there (same id) are skipped. `project` moves everything into one
 * project. A project-limited caller may only import into its projects. Every read comes first (which items
 * are new), then the tenant's quotas are checked against what the file adds: an import that would take the
 * tenant past one writes nothing.
 */
export async function importRecords(
  scope: TenantScope,
  services: Services,
  records: ImportRecords,
  project?: string,
): Promise<ImportSummary> {
  const projectOf = (p: string) => project ?? p;
  for (const record of [
    ...records.items,
    ...records.conversations,
    ...records.projectTasks,
    ...records.projectSettings,
    ...records.extractionWindows,
    ...records.memoryEvents,
    ...records.documents,
  ]) {
    const target = projectOf(record.project);
    if (!scopeAllowsProject(scope, target))
      throw permissionDenied(
        `This key may not import into project '${target}'; it is limited to: ${scope.projects!.join(", ")}`,
      );
  }
  const newId = await importedIdMaker(scope.tenantId);
  const none = Object.fromEntries(KEPT.map((kind) => [kind, 0])) as Record<Kept, number>;
  const summary: ImportSummary = {
    format: records.format,
    imported: { items: 0, conversations: 0, ...none },
    skipped: { items: 0, ...none },
  };

  // Conversations first (messages need them); a message's conversation missing from the file is created.
  const conversations = new Map(records.conversations.map((c) => [c.id, { ...c, project: projectOf(c.project) }]));
  for (const item of records.items) {
    if (item.conversation_id !== null && !conversations.has(item.conversation_id)) {
      conversations.set(item.conversation_id, {
        type: "conversation",
        id: item.conversation_id,
        project: projectOf(item.project),
        summarized_count: 0,
        summarized_tokens: 0,
        extracted_count: 0,
        extracted_tokens: 0,
        next_position: 0,
        extraction_epoch: 0,
        extract_due_at: null,
        created_at: item.created_at,
        updated_at: item.created_at,
      });
    }
  }
  if (conversations.size > 0) {
    // A conversation keeps the project it was created in: a file that puts it elsewhere writes nothing.
    const { results: stored } = await scope.d1
      .prepare(`SELECT id, project FROM conversations WHERE tenant_id = ? AND id ${IN_JSON}`)
      .bind(scope.tenantId, JSON.stringify([...conversations.keys()]))
      .all<{ id: string; project: string }>();
    for (const row of stored) {
      const wanted = conversations.get(row.id)!.project;
      if (row.project !== wanted) {
        throw new AppError(
          "CONFLICT",
          `Conversation '${row.id}' is in project '${row.project}' here; the file puts it in '${wanted}'`,
          { conversation_id: row.id },
        );
      }
    }
  }

  const documents = await planDocuments(scope, services, records.documents, newId, projectOf);
  // Messages in reading order, so each one's context is the turn before it, as when it was logged.
  const items = [...records.items].sort(
    (a, b) =>
      (a.conversation_id ?? "").localeCompare(b.conversation_id ?? "") ||
      (a.position ?? 0) - (b.position ?? 0) ||
      a.created_at - b.created_at,
  );
  const plan = await planItems(
    scope,
    items,
    newId,
    projectOf,
    tenantLimits(services.config.quotas, scope.quotas),
    (item) => dedupeInput(documents, item, newId),
  );
  checkStorageQuotas(plan.limits, plan.usage, { items: plan.adding, bytes: plan.bytes });
  const documentRows = await writeDocuments(scope, services, documents);

  if (conversations.size > 0) {
    const json = JSON.stringify(
      [...conversations.values()].map((c) => [
        c.id,
        c.project,
        c.summarized_count,
        c.summarized_tokens,
        c.created_at,
        c.updated_at,
        c.extracted_count,
        c.next_position,
        c.extraction_epoch,
        c.extract_due_at,
      ]),
    );
    // With its extraction cursor: what the file's tenant had read is not read again. A conversation already here
    // keeps its own.
    const [inserted] = await scope.d1.batch([
      scope.d1
        .prepare(
          `INSERT OR IGNORE INTO conversations (tenant_id, id, project, message_count, tokens, summarized_count, summarized_tokens, created_at, updated_at,
             extracted_count, next_position, extraction_epoch, extract_due_at)
           SELECT ?, j.value ->> 0, j.value ->> 1, 0, 0, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5,
             j.value ->> 6, j.value ->> 7, j.value ->> 8, j.value ->> 9 FROM json_each(?) j`,
        )
        .bind(scope.tenantId, json),
    ]);
    summary.imported.conversations = inserted!.meta.changes ?? 0;
  }

  const counter = await services.tokens();
  const previousTurn = new Map<string, string>();
  const chunksOfDocument = new Map<string, number>();
  const writtenIds: string[] = [];
  // Messages without a position (a hand-made file) follow the highest position their conversation has in the file.
  const lastPosition = new Map<string, number>();
  for (const item of items)
    if (item.conversation_id && item.position !== null)
      lastPosition.set(item.conversation_id, Math.max(lastPosition.get(item.conversation_id) ?? -1, item.position));
  const nextPosition = (conversation: string) => {
    const position = (lastPosition.get(conversation) ?? -1) + 1;
    lastPosition.set(conversation, position);
    return position;
  };
  for (let i = 0; i < items.length; i += ITEMS_PER_BATCH) {
    const page = items.slice(i, i + ITEMS_PER_BATCH);
    const rows: unknown[] = [];
    const chunkRows: ChunkRow[] = [];
    const provenance: [string, string][] = [];
    let keywordTokens = 0;
    for (const [k, item] of page.entries()) {
      const id = newId(item.id);
      const documentChunks = item.document_id === undefined ? 0 : (chunksOfDocument.get(item.document_id) ?? 0);
      if (item.document_id !== undefined) chunksOfDocument.set(item.document_id, documentChunks + 1);
      const document = chunkPlace(documents, item, documentChunks);
      const context = chunkContext(
        {
          project: item.project,
          kind: item.kind,
          type: item.item_type,
          content: item.content,
          conversationId: item.conversation_id,
          role: item.role,
          speaker: speakerOf(item),
          tags: item.tags,
          filePath: item.file_path,
          document: document ?? undefined,
        },
        item.conversation_id ? previousTurn.get(item.conversation_id) : undefined,
      );
      if (item.conversation_id) previousTurn.set(item.conversation_id, item.content);
      if (!plan.write[i + k]) {
        summary.skipped.items++;
        continue;
      }
      // A chunk keeps its place in its document (an older export has none: the file's order stands in).
      const position =
        item.conversation_id !== null
          ? (item.position ?? nextPosition(item.conversation_id))
          : document !== null
            ? (item.position ?? documentChunks)
            : null;
      const tokens = counter.count(item.content);
      chunkText(item.content, tokens, counter).forEach((chunk, index) => {
        const row = chunkRow(
          scope.tenantId,
          id,
          index,
          chunk,
          item.conversation_id ? context : withHeadings(context, chunk),
          item.created_at,
        );
        keywordTokens += row.ftsTokens;
        chunkRows.push(row);
      });
      rows.push([
        id,
        projectOf(item.project),
        item.kind,
        item.item_type,
        item.conversation_id,
        position,
        item.role,
        item.content,
        JSON.stringify(item.tags),
        item.importance,
        JSON.stringify(item.metadata),
        item.tier,
        item.pinned ? 1 : 0,
        item.task_id,
        item.file_path,
        item.line_start,
        item.line_end,
        tokens,
        plan.hashes[i + k],
        item.created_at,
        item.touched_at ?? item.created_at,
        item.key,
        item.superseded_by === null ? null : newId(item.superseded_by),
        item.generation,
        item.gc_survival_count,
        ...derivedColumns(item, newId),
        document?.id ?? null,
        document?.page ?? null,
        document?.section ?? null,
      ]);
      for (const source of item.sources ?? []) provenance.push([newId(source), id]);
      writtenIds.push(id);
    }
    if (rows.length === 0) continue;
    await scope.d1.batch([
      scope.d1
        .prepare(
          `INSERT INTO items (id, tenant_id, project, kind, type, conversation_id, position, role, content, tags, importance, metadata, tier, pinned, task_id,
             file_path, line_start, line_end, tokens, content_hash, created_at, touched_at, key, superseded_by, generation, gc_survival_count,
             memory_kind, subject, subject_key, valid_from, valid_to, said_by, when_precision, sources, document_id, document_page,
             document_section)
           SELECT j.value ->> 0, ?, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8,
             j.value ->> 9, j.value ->> 10, j.value ->> 11, j.value ->> 12, j.value ->> 13, j.value ->> 14, j.value ->> 15, j.value ->> 16, j.value ->> 17,
             j.value ->> 18, j.value ->> 19, j.value ->> 20, j.value ->> 21, j.value ->> 22, j.value ->> 23, j.value ->> 24,
             j.value ->> 25, j.value ->> 26, j.value ->> 27, j.value ->> 28, j.value ->> 29, j.value ->> 30, j.value ->> 31, j.value ->> 32,
             j.value ->> 33, j.value ->> 34, j.value ->> 35
           FROM json_each(?) j`,
        )
        .bind(scope.tenantId, JSON.stringify(rows)),
      ...provenanceStatements(scope, provenance),
      ...insertChunkRows(scope, chunkRows),
      countKeywordChunks(scope, chunkRows.length, keywordTokens),
    ]);
    summary.imported.items += rows.length;
  }

  const conversationIds = JSON.stringify([...conversations.keys()]);
  const conversationReach = projectClause(scope, "c.project");
  const ofConversation =
    "FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id";
  const after: Record<"conversations" | Kept | "caches", D1PreparedStatement[]> = {
    // Counts follow the messages (imported now or before), as appending them one by one would have left them; so
    // do the tokens extraction has read (this deployment counts them again). The next message goes past every turn
    // and past the cursor, or extraction would never read it.
    conversations: [
      scope.d1
        .prepare(
          `UPDATE conversations SET message_count = (SELECT COUNT(*) ${ofConversation}),
             tokens = (SELECT COALESCE(SUM(tokens), 0) ${ofConversation}),
             extracted_tokens = (SELECT COALESCE(SUM(tokens), 0) ${ofConversation} AND i.position < conversations.extracted_count),
             next_position = MAX(next_position, extracted_count, (SELECT COALESCE(MAX(position), -1) + 1 ${ofConversation}))
           WHERE tenant_id = ? AND id ${IN_JSON}`,
        )
        .bind(scope.tenantId, conversationIds),
    ],
    summaries: records.summaries.map((s) =>
      scope.d1
        .prepare(
          // Only onto a conversation of the caller's projects.
          `INSERT OR IGNORE INTO summaries (tenant_id, conversation_id, version, summary, code_blocks, key_insights, importance_score, message_count, tokens_used, token_limit, created_at)
           SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM conversations c WHERE c.tenant_id = ? AND c.id = ?${conversationReach.sql})`,
        )
        .bind(
          scope.tenantId,
          s.conversation_id,
          s.version,
          s.summary,
          JSON.stringify(s.code_blocks),
          JSON.stringify(s.key_insights),
          s.importance_score,
          s.message_count,
          s.tokens_used,
          s.token_limit,
          s.created_at,
          scope.tenantId,
          s.conversation_id,
          ...conversationReach.params,
        ),
    ),
    project_tasks: records.projectTasks.map((t) =>
      scope.d1
        .prepare(
          "INSERT OR IGNORE INTO project_tasks (tenant_id, project, current_task_id, previous_task_id, updated_at) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(scope.tenantId, projectOf(t.project), t.current_task_id, t.previous_task_id, t.updated_at),
    ),
    links: linkStatements(scope, records.links, newId),
    documents: documentRows,
    ...extractionStatements(scope, records, newId, projectOf),
    caches: bumpCacheGenerations(scope, new Set([...records.items.map((i) => projectOf(i.project))])),
  };
  const results = await batchInSlices(scope, Object.values(after).flat());
  const written = new Map<string, number>();
  let at = 0;
  for (const [kind, statements] of Object.entries(after)) {
    const done = results.slice(at, at + statements.length);
    written.set(
      kind,
      done.reduce((n, r) => n + (r.meta.changes ?? 0), 0),
    );
    at += statements.length;
  }
  const given: Record<Kept, number> = {
    summaries: records.summaries.length,
    links: records.links.length,
    project_tasks: records.projectTasks.length,
    project_settings: records.projectSettings.length,
    extraction_windows: records.extractionWindows.length,
    memory_events: records.memoryEvents.length,
    documents: records.documents.length,
  };
  for (const kind of KEPT) {
    summary.imported[kind] = written.get(kind)!;
    summary.skipped[kind] = given[kind] - summary.imported[kind];
  }
  await queueEmbedding(scope, services, writtenIds);
  return summary;
}

/** Who said a message: as the file names them, else its agent_name (log_chat's); null: its role. */
function speakerOf(item: ItemRecord): string | null {
  const name = item.metadata.agent_name;
  return item.speaker ?? (typeof name === "string" ? name : null);
}

/** D1 batches of at most 500 statements, in order. */
async function batchInSlices(scope: TenantScope, statements: D1PreparedStatement[]): Promise<D1Result[]> {
  const out: D1Result[] = [];
  for (let i = 0; i < statements.length; i += 500) out.push(...(await scope.d1.batch(statements.slice(i, i + 500))));
  return out;
}
