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
import { ITEMS_PER_BATCH, planItems } from "./import-plan";
import type { ImportRecords, ItemRecord } from "./import-schemas";

export interface ImportSummary {
  format: string;
  imported: Record<"items" | "conversations" | "summaries" | "links" | "project_tasks", number>;
  skipped: Record<"items" | "summaries" | "links" | "project_tasks", number>;
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
 * this deployment's encoding, keyword-indexed and queued for embedding; conversations get their counts
 * from their messages; rows already there (same id) are skipped. `project` moves everything into one
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
  for (const record of [...records.items, ...records.conversations, ...records.projectTasks]) {
    const target = projectOf(record.project);
    if (!scopeAllowsProject(scope, target))
      throw permissionDenied(
        `This key may not import into project '${target}'; it is limited to: ${scope.projects!.join(", ")}`,
      );
  }
  const newId = await importedIdMaker(scope.tenantId);
  const summary: ImportSummary = {
    format: records.format,
    imported: { items: 0, conversations: 0, summaries: 0, links: 0, project_tasks: 0 },
    skipped: { items: 0, summaries: 0, links: 0, project_tasks: 0 },
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

  // Messages in reading order, so each one's context is the turn before it, as when it was logged.
  const items = [...records.items].sort(
    (a, b) =>
      (a.conversation_id ?? "").localeCompare(b.conversation_id ?? "") ||
      (a.position ?? 0) - (b.position ?? 0) ||
      a.created_at - b.created_at,
  );
  const plan = await planItems(scope, items, newId, projectOf, tenantLimits(services.config.quotas, scope.quotas));
  checkStorageQuotas(plan.limits, plan.usage, { items: plan.adding, bytes: plan.bytes });

  if (conversations.size > 0) {
    const json = JSON.stringify(
      [...conversations.values()].map((c) => [
        c.id,
        c.project,
        c.summarized_count,
        c.summarized_tokens,
        c.created_at,
        c.updated_at,
      ]),
    );
    const [inserted] = await scope.d1.batch([
      scope.d1
        .prepare(
          `INSERT OR IGNORE INTO conversations (tenant_id, id, project, message_count, tokens, summarized_count, summarized_tokens, created_at, updated_at)
           SELECT ?, j.value ->> 0, j.value ->> 1, 0, 0, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5 FROM json_each(?) j`,
        )
        .bind(scope.tenantId, json),
    ]);
    summary.imported.conversations = inserted!.meta.changes ?? 0;
  }

  const counter = await services.tokens();
  const previousTurn = new Map<string, string>();
  const written: string[] = [];
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
    let keywordTokens = 0;
    for (const [k, item] of page.entries()) {
      const id = newId(item.id);
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
        },
        item.conversation_id ? previousTurn.get(item.conversation_id) : undefined,
      );
      if (item.conversation_id) previousTurn.set(item.conversation_id, item.content);
      if (!plan.write[i + k]) {
        summary.skipped.items++;
        continue;
      }
      const position = item.conversation_id === null ? null : (item.position ?? nextPosition(item.conversation_id));
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
      ]);
      written.push(id);
    }
    if (rows.length === 0) continue;
    await scope.d1.batch([
      scope.d1
        .prepare(
          `INSERT INTO items (id, tenant_id, project, kind, type, conversation_id, position, role, content, tags, importance, metadata, tier, pinned, task_id,
             file_path, line_start, line_end, tokens, content_hash, created_at, touched_at, key, superseded_by, generation, gc_survival_count)
           SELECT j.value ->> 0, ?, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8,
             j.value ->> 9, j.value ->> 10, j.value ->> 11, j.value ->> 12, j.value ->> 13, j.value ->> 14, j.value ->> 15, j.value ->> 16, j.value ->> 17,
             j.value ->> 18, j.value ->> 19, j.value ->> 20, j.value ->> 21, j.value ->> 22, j.value ->> 23, j.value ->> 24
           FROM json_each(?) j`,
        )
        .bind(scope.tenantId, JSON.stringify(rows)),
      ...insertChunkRows(scope, chunkRows),
      countKeywordChunks(scope, chunkRows.length, keywordTokens),
    ]);
    summary.imported.items += rows.length;
  }

  const conversationIds = JSON.stringify([...conversations.keys()]);
  const conversationReach = projectClause(scope, "c.project");
  const after: D1PreparedStatement[] = [
    // Counts follow the messages (imported now or before), as appending them one by one would have left them.
    scope.d1
      .prepare(
        `UPDATE conversations SET message_count = (SELECT COUNT(*) FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id),
           tokens = (SELECT COALESCE(SUM(tokens), 0) FROM items i WHERE i.tenant_id = conversations.tenant_id AND i.conversation_id = conversations.id)
         WHERE tenant_id = ? AND id ${IN_JSON}`,
      )
      .bind(scope.tenantId, conversationIds),
    ...records.summaries.map((s) =>
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
    ...records.projectTasks.map((t) =>
      scope.d1
        .prepare(
          "INSERT OR IGNORE INTO project_tasks (tenant_id, project, current_task_id, previous_task_id, updated_at) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(scope.tenantId, projectOf(t.project), t.current_task_id, t.previous_task_id, t.updated_at),
    ),
    ...records.links.map((l) => {
      const end = (type: string, id: string) => linkEnd(scope, type, id, newId);
      const source = end(l.source_type, l.source_id);
      const target = end(l.target_type, l.target_id);
      return scope.d1
        .prepare(
          `INSERT OR IGNORE INTO links (id, tenant_id, source_type, source_id, target_type, target_id, relationship_type, weight, metadata, created_at)
           SELECT ?, ?, ?, ${source.sql}, ?, ${target.sql}, ?, ?, ?, ? WHERE ${source.sql} IS NOT NULL AND ${target.sql} IS NOT NULL`,
        )
        .bind(
          newId(l.id),
          scope.tenantId,
          l.source_type,
          ...source.params,
          l.target_type,
          ...target.params,
          l.relationship_type,
          l.weight,
          JSON.stringify(l.metadata),
          l.created_at,
          ...source.params,
          ...target.params,
        );
    }),
    ...bumpCacheGenerations(scope, new Set([...records.items.map((i) => projectOf(i.project))])),
  ];
  const results = await batchInSlices(scope, after);
  const changes = (from: number, count: number) =>
    results.slice(from, from + count).reduce((n, r) => n + (r.meta.changes ?? 0), 0);
  summary.imported.summaries = changes(1, records.summaries.length);
  summary.skipped.summaries = records.summaries.length - summary.imported.summaries;
  summary.imported.project_tasks = changes(1 + records.summaries.length, records.projectTasks.length);
  summary.skipped.project_tasks = records.projectTasks.length - summary.imported.project_tasks;
  summary.imported.links = changes(1 + records.summaries.length + records.projectTasks.length, records.links.length);
  summary.skipped.links = records.links.length - summary.imported.links;
  await queueEmbedding(scope, services, written);
  return summary;
}

/** A link end as SQL: an item id remapped, a conversation id as is, a chunk ("<item id>#<index>") looked up. */
function linkEnd(
  scope: TenantScope,
  type: string,
  id: string,
  newId: (id: string) => string,
): { sql: string; params: unknown[] } {
  // Each end must exist in the tenant and lie in the caller's projects (a project-limited key links only there).
  const item = projectClause(scope, "i.project");
  if (type === "conversation") {
    const own = projectClause(scope, "c.project");
    return {
      sql: `(SELECT c.id FROM conversations c WHERE c.tenant_id = ? AND c.id = ?${own.sql})`,
      params: [scope.tenantId, id, ...own.params],
    };
  }
  if (type === "chunk") {
    const at = id.lastIndexOf("#");
    return {
      sql: `(SELECT CAST(c.id AS TEXT) FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.tenant_id = ? AND c.item_id = ? AND c.chunk_index = ?${item.sql})`,
      params: [scope.tenantId, newId(id.slice(0, at)), Number(id.slice(at + 1)), ...item.params],
    };
  }
  return {
    sql: `(SELECT i.id FROM items i WHERE i.tenant_id = ? AND i.id = ?${item.sql})`,
    params: [scope.tenantId, newId(id), ...item.params],
  };
}

function speakerOf(item: ItemRecord): string | null {
  const name = item.metadata.agent_name;
  return typeof name === "string" ? name : null;
}

/** D1 batches of at most 500 statements, in order. */
async function batchInSlices(scope: TenantScope, statements: D1PreparedStatement[]): Promise<D1Result[]> {
  const out: D1Result[] = [];
  for (let i = 0; i < statements.length; i += 500) out.push(...(await scope.d1.batch(statements.slice(i, i + 500))));
  return out;
}
