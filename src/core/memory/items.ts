import { sha256Hex } from "../../crypto";
import { IN_JSON, scopeAllowsProject, type TenantScope } from "../../db/scope";
import { AppError, ConcurrentDuplicate, invalidParameter, permissionDenied } from "../../errors";
import type { Services } from "../../ports";
import { itemJobs } from "../../shared/item-jobs";
import { utf8Bytes } from "../../shared/utf8";
import { bumpCacheGenerations } from "../context/cache-generation";
import { countKeywordChunks } from "../keyword-index/indexing";
import {
  checkStorageQuotas,
  limitsStorage,
  NO_USAGE,
  type TenantUsage,
  tenantLimits,
  usageOf,
  usageStatement,
} from "../tenants/quotas";
import { type ChunkRow, chunkRow, insertChunkRows } from "./chunk-rows";
import { chunkText, type TextChunk } from "./chunking";
import { extractSettingsStatement, queueConversationJobs } from "./conversation-jobs";
import {
  type ConversationCounters,
  type ConversationDelta,
  type ItemRow,
  insertItemRows,
  upsertConversations,
} from "./item-rows";
import { MAX_ITEM_CHARS, type NewItem, type WrittenItem } from "./item-types";

/** How much of the previous turn a message's context carries. */
const PREVIOUS_TURN_CHARS = 300;

/**
 * Writes items atomically (one D1 batch: conversations, items, chunks, FTS rows), counting tokens
 * once, deduplicating by content hash within each project (messages excepted), then queues embedding.
 * Keyword search finds the items at once; vector search once the embed job has run.
 */
export async function writeItems(
  scope: TenantScope,
  services: Services,
  inputs: NewItem[],
  options: WriteOptions = {},
): Promise<WrittenItem[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await writeItemsOnce(scope, services, inputs, options);
    } catch (error) {
      // A concurrent writer stored the same content between our dedupe read and our batch, which then
      // rolled back whole: a second pass finds that item and answers duplicate_of, as a serial call would.
      if (!(error instanceof ConcurrentDuplicate) || attempt >= 3)
        throw error instanceof ConcurrentDuplicate ? error.conflict : error;
    }
  }
}

export interface WriteOptions {
  /**
   * Statements to commit in the same D1 batch as the items, given what will be written (ids known, `superseded` not
   * yet): extraction records its window and decisions with the memories, all or nothing.
   */
  alsoInBatch?: (written: readonly WrittenItem[]) => D1PreparedStatement[];
  /** Leave memory extraction to the caller (memory_ingest queues one job for the whole conversation). */
  noExtractionJobs?: boolean;
}

async function writeItemsOnce(
  scope: TenantScope,
  services: Services,
  given: NewItem[],
  options: WriteOptions,
): Promise<WrittenItem[]> {
  const checkReach = (item: NewItem) => {
    if (!scopeAllowsProject(scope, item.project)) {
      throw permissionDenied(
        `This key may not touch project '${item.project}'; it is limited to: ${scope.projects!.join(", ")}`,
        { allowed_projects: scope.projects },
      );
    }
  };
  given.forEach((item, i) => {
    if (!item.projectFromConversation) checkReach(item);
    if (item.content.trim().length === 0)
      throw invalidParameter("content", `content must not be empty${given.length > 1 ? ` (item ${i})` : ""}`);
    if (item.content.length > MAX_ITEM_CHARS) {
      throw invalidParameter(
        "content",
        `content is ${item.content.length} characters; the limit is ${MAX_ITEM_CHARS}${given.length > 1 ? ` (item ${i})` : ""}`,
      );
    }
  });
  const counter = await services.tokens();
  const now = Date.now();
  const hashes = await Promise.all(given.map((item) => sha256Hex(item.content)));
  const limits = tenantLimits(services.config.quotas, scope.quotas);
  const { existing, previousTurn, conversationProjects, usage, extractSettings } = await readBeforeWrite(
    scope,
    given,
    hashes,
    limitsStorage(limits),
    services.model !== null,
  );
  // A message that joins its conversation's project learns it from the same read, then passes the same check.
  const inputs = given.map((item) => {
    if (!item.projectFromConversation) return item;
    const joined = { ...item, project: conversationProjects.get(item.conversationId!) ?? item.project };
    checkReach(joined);
    return joined;
  });

  const statements: D1PreparedStatement[] = [];
  const itemRows: ItemRow[] = [];
  const conversations = new Map<string, ConversationDelta>();
  const results: WrittenItem[] = [];
  const seenInBatch = new Map<string, string>();
  const newIds: string[] = [];
  const chunkRows: ChunkRow[] = [];
  /** Result index -> index of its supersede statement (whose RETURNING names the superseded items). */
  const supersedeStatements = new Map<number, number>();
  let keywordChunks = 0;
  let keywordTokens = 0;
  let newBytes = 0;
  inputs.forEach((item, i) => {
    const hash = hashes[i]!;
    const dedupeKey = `${item.project}\u0000${item.key ?? ""}\u0000${hash}`;
    const duplicate = item.conversationId ? undefined : (existing.get(dedupeKey) ?? seenInBatch.get(dedupeKey));
    if (duplicate) {
      results.push({
        id: duplicate,
        duplicateOf: duplicate,
        project: item.project,
        tokens: 0,
        chunkCount: 0,
        createdAt: now,
        superseded: [],
      });
      return;
    }
    const id = crypto.randomUUID();
    if (!item.conversationId) seenInBatch.set(dedupeKey, id);
    const createdAt = item.createdAt ?? now;
    const tokens = counter.count(item.content);
    const chunks = chunkText(item.content, tokens, counter);
    const context = chunkContext(item, item.conversationId ? previousTurn.get(item.conversationId) : undefined);
    if (item.conversationId) {
      const delta = conversations.get(item.conversationId) ?? {
        id: item.conversationId,
        project: item.project,
        messages: 0,
        tokens: 0,
        firstAt: createdAt,
        lastAt: createdAt,
      };
      delta.messages++;
      delta.tokens += tokens;
      delta.lastAt = Math.max(delta.lastAt, createdAt);
      conversations.set(item.conversationId, delta);
      previousTurn.set(item.conversationId, item.content);
    }
    if (item.key) {
      supersedeStatements.set(results.length, statements.length);
      // Each keyed item in its own statement, right after the supersede it follows.
      statements.push(
        supersedeKey(scope, item.project, item.key, id, now, item.derived?.validFrom ?? now),
        ...insertItemRows(scope, [{ id, item, hash, tokens, createdAt }]),
      );
    } else {
      itemRows.push({ id, item, hash, tokens, createdAt });
    }
    chunks.forEach((chunk, index) => {
      const row = chunkRow(
        scope.tenantId,
        id,
        index,
        chunk,
        item.conversationId ? context : withHeadings(context, chunk),
        createdAt,
      );
      keywordChunks++;
      keywordTokens += row.ftsTokens;
      chunkRows.push(row);
    });
    newIds.push(id);
    newBytes += utf8Bytes(item.content);
    results.push({
      id,
      duplicateOf: null,
      project: item.project,
      tokens,
      chunkCount: chunks.length,
      createdAt,
      superseded: [],
    });
  });
  // Before anything is written: a call that would take the tenant past a quota writes nothing (duplicates add nothing).
  checkStorageQuotas(limits, usage, { items: newIds.length, bytes: newBytes });

  const also = options.alsoInBatch?.(results) ?? [];
  if (newIds.length > 0 || also.length > 0) {
    // Keyed items (each superseding before its insert) first, then the rest in one statement per group.
    statements.push(...insertItemRows(scope, itemRows));
    const conversationStatement =
      conversations.size > 0 ? statements.push(upsertConversations(scope, [...conversations.values()])) - 1 : -1;
    statements.push(...insertChunkRows(scope, chunkRows));
    if (newIds.length > 0) statements.push(...bumpCacheGenerations(scope, new Set(inputs.map((i) => i.project))));
    if (keywordChunks > 0) statements.push(countKeywordChunks(scope, keywordChunks, keywordTokens));
    statements.push(...also);
    try {
      const batch = await scope.d1.batch<ConversationCounters>(statements);
      for (const [result, statement] of supersedeStatements)
        results[result]!.superseded = (batch[statement]!.results as unknown as { id: string }[]).map((r) => r.id);
      if (conversationStatement >= 0) {
        const added = new Map([...conversations.values()].map((c) => [c.id, c.tokens]));
        await queueConversationJobs(scope, services, batch[conversationStatement]!.results, added, (project) =>
          options.noExtractionJobs ? false : extractionOn(project, extractSettings, services),
        );
      }
    } catch (error) {
      // SQLite names the columns of a plain index, but only the name of one over an expression (items_tenant_hash).
      if (/UNIQUE constraint failed: (items\.|index 'items_tenant_hash')/.test(String(error)))
        throw new ConcurrentDuplicate();
      throw error;
    }
  }
  if (newIds.length > 0) await queueEmbedding(scope, services, newIds);
  return results;
}

/** Queues embedding; if the queue is unavailable the minute pass re-sends it (src/jobs/recent-jobs.ts: embedded_at IS NULL). */
export async function queueEmbedding(scope: TenantScope, services: Services, itemIds: string[]): Promise<void> {
  try {
    await services.jobs.send(itemJobs("embed", scope.tenantId, itemIds));
  } catch (error) {
    console.error("could not queue embedding; the every-minute pass re-sends it", error);
  }
}

/** A message's chunk context: its speaker, then the start of the turn it answers. */
export function messageContext(speaker: string, previousTurn: string | null | undefined): string {
  return [speaker, previousTurn?.slice(0, PREVIOUS_TURN_CHARS)].filter(Boolean).join("\n");
}

/**
 * Context makes a chunk findable by what its text leaves implicit ("Yes, last week!" answers a
 * question about the previous turn; the speaker's name is rarely in their own words).
 */
export function chunkContext(item: NewItem, previousTurn: string | undefined): string {
  if (item.conversationId) return messageContext(item.speaker ?? item.role ?? "", previousTurn);
  return [item.filePath, ...(item.tags ?? [])].filter(Boolean).join(" ");
}

/**
 * A document chunk's context: its item's (path and tags), then the Markdown headings it sits under (chunking.ts), so
 * the fourth chunk of "# Deploy guide / ## Rollback" is found by "deploy rollback" though its own text names neither.
 */
export function withHeadings(context: string, chunk: TextChunk): string {
  return chunk.headings ? [context, chunk.headings.join(" / ")].filter(Boolean).join("\n") : context;
}

/**
 * What a write needs to know first, in one round trip: items that already hold the same content (for
 * dedupe; messages are exempt), the latest message of each conversation the inputs append to, and the
 * tenant's usage for its quotas (`withUsage`). A conversation belongs to one project: a message for a
 * conversation of another project is refused before anything is written.
 */
async function readBeforeWrite(
  scope: TenantScope,
  inputs: NewItem[],
  hashes: string[],
  withUsage: boolean,
  withExtraction: boolean,
): Promise<{
  existing: Map<string, string>;
  previousTurn: Map<string, string>;
  conversationProjects: Map<string, string>;
  usage: TenantUsage;
  /** Projects' own extraction settings (where they have one), for the conversations a write appends to. */
  extractSettings: Map<string, boolean>;
}> {
  const projectOf = new Map<string, string>();
  for (const item of inputs) {
    if (!item.conversationId || item.projectFromConversation) continue;
    const project = projectOf.get(item.conversationId);
    if (project !== undefined && project !== item.project) throw conversationConflict(item.conversationId);
    projectOf.set(item.conversationId, item.project);
  }
  const conversations = [...new Set(inputs.flatMap((item) => (item.conversationId ? [item.conversationId] : [])))];
  const wanted = [...new Set(hashes.filter((_, i) => !inputs[i]!.conversationId))];
  const wantedProjects = [...new Set(inputs.filter((item) => !item.conversationId).map((item) => item.project))];
  const statements: D1PreparedStatement[] = conversations.map((conversationId) =>
    scope.d1
      .prepare(
        `SELECT c.project, (SELECT content FROM items i WHERE i.tenant_id = c.tenant_id AND i.conversation_id = c.id ORDER BY position DESC LIMIT 1) AS content
         FROM conversations c WHERE c.tenant_id = ? AND c.id = ?`,
      )
      .bind(scope.tenantId, conversationId),
  );
  if (wanted.length > 0) {
    statements.push(
      scope.d1
        // Both lists as IN: the lookup walks the unique (tenant, project, hash) index, not the tenant's rows.
        // Current items only: a superseded fact's text may be stored again.
        .prepare(
          `SELECT id, project, key, content_hash FROM items
           WHERE tenant_id = ? AND project ${IN_JSON} AND conversation_id IS NULL AND tier <> 'superseded' AND content_hash ${IN_JSON}`,
        )
        .bind(scope.tenantId, JSON.stringify(wantedProjects), JSON.stringify(wanted)),
    );
  }
  // Last, so the other results keep their places; they ride in the same batch (no round trip of their own).
  const usageAt = withUsage ? statements.push(usageStatement(scope.d1, scope.tenantId)) - 1 : -1;
  const settingsAt =
    withExtraction && conversations.length > 0
      ? statements.push(
          extractSettingsStatement(
            scope,
            [...new Set(inputs.filter((i) => i.conversationId).map((i) => i.project))],
            conversations,
          ),
        ) - 1
      : -1;
  const existing = new Map<string, string>();
  const previousTurn = new Map<string, string>();
  const conversationProjects = new Map<string, string>();
  const extractSettings = new Map<string, boolean>();
  if (statements.length === 0)
    return { existing, previousTurn, conversationProjects, usage: NO_USAGE, extractSettings };
  const results = await scope.d1.batch<Record<string, string | null>>(statements);
  conversations.forEach((conversationId, i) => {
    const row = results[i]!.results[0] as { project: string; content: string | null } | undefined;
    if (!row) return;
    const given = projectOf.get(conversationId);
    if (given !== undefined && row.project !== given) throw conversationConflict(conversationId);
    conversationProjects.set(conversationId, row.project);
    if (row.content !== null) previousTurn.set(conversationId, row.content);
  });
  if (wanted.length > 0) {
    for (const row of results[conversations.length]!.results as {
      id: string;
      project: string;
      key: string | null;
      content_hash: string;
    }[]) {
      existing.set(`${row.project}\u0000${row.key ?? ""}\u0000${row.content_hash}`, row.id);
    }
  }
  if (settingsAt >= 0) {
    for (const row of results[settingsAt]!.results as unknown as { project: string; extract: number }[])
      extractSettings.set(row.project, row.extract === 1);
  }
  const usage = usageAt >= 0 ? usageOf(results[usageAt]) : NO_USAGE;
  return { existing, previousTurn, conversationProjects, usage, extractSettings };
}

/** Whether a project extracts memories: its own setting, else the deployment's default. */
function extractionOn(project: string, settings: ReadonlyMap<string, boolean>, services: Services): boolean {
  return settings.get(project) ?? services.config.extraction.byDefault;
}

function conversationConflict(conversationId: string): AppError {
  return new AppError(
    "CONFLICT",
    `Conversation '${conversationId}' belongs to another project; a conversation keeps the project it was created in`,
    {
      parameter: "conversation_id",
    },
  );
}

/** Retires the project's current item(s) of a key in favour of `successor`, in the batch before the successor's insert. */
function supersedeKey(
  scope: TenantScope,
  project: string,
  key: string,
  successor: string,
  at: number,
  validTo: number,
): D1PreparedStatement {
  return scope.d1
    .prepare(
      `UPDATE items SET tier = 'superseded', superseded_by = ?, touched_at = ?, valid_to = COALESCE(valid_to, ?)
       WHERE tenant_id = ? AND project = ? AND key = ? AND tier <> 'superseded' RETURNING id`,
    )
    .bind(successor, at, validTo, scope.tenantId, project, key);
}
