import { sha256Hex } from "../../crypto";
import { scopeAllowsProject, type TenantScope } from "../../db/scope";
import { ConcurrentDuplicate, invalidParameter, permissionDenied } from "../../errors";
import type { Services } from "../../ports";
import { itemJobs } from "../../shared/item-jobs";
import { utf8Bytes } from "../../shared/utf8";
import { bumpCacheGenerations } from "../context/cache-generation";
import { countKeywordChunks } from "../keyword-index/indexing";
import { checkStorageQuotas, limitsStorage, tenantLimits } from "../tenants/quotas";
import { type ChunkRow, chunkRow, insertChunkRows } from "./chunk-rows";
import { chunkText, type TextChunk } from "./chunking";
import { extractionDueAt, queueConversationJobs } from "./conversation-jobs";
import {
  type ConversationCounters,
  type ConversationDelta,
  type ItemRow,
  insertItemRows,
  upsertConversations,
} from "./item-rows";
import { MAX_ITEM_CHARS, type NewItem, type WrittenItem } from "./item-types";
import { extractionOn, readBeforeWrite } from "./write-reads";

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
  /** Whether the conversations are extracted, whatever their project says (memory_ingest's `extract`). */
  extractOverride?: boolean;
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
  const hashes = await Promise.all(given.map((item) => sha256Hex(dedupeIdentity(item))));
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
    // A derived memory's key has a timeline that extraction keeps itself (by time, not by arrival: timeline.ts).
    if (item.key && !item.derived) {
      supersedeStatements.set(results.length, statements.length);
      // Each keyed item in its own statement, right after the supersede it follows.
      statements.push(
        supersedeKey(scope, item.project, item.key, id, now, now),
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
    const extracts = (project: string) =>
      services.model !== null && (options.extractOverride ?? extractionOn(project, extractSettings, services));
    const deltas = [...conversations.values()].map((c) => ({
      ...c,
      extractDueAt: extracts(c.project) ? extractionDueAt(services, now) : null,
    }));
    const conversationStatement = deltas.length > 0 ? statements.push(upsertConversations(scope, deltas)) - 1 : -1;
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
  // Per minute, the items wait pending (embedded_at IS NULL) for the minute pass's job (src/jobs/recent-jobs.ts).
  if (newIds.length > 0 && services.config.jobDispatch === "per-write") await queueEmbedding(scope, services, newIds);
  return results;
}

/**
 * What makes two items one for dedupe: their content, and for a derived memory with a `when` its day too, so that a
 * support group attended on two days is two memories.
 */
function dedupeIdentity(item: NewItem): string {
  // A document's chunks are its own, whatever another document (or another of its passages) says.
  if (item.document)
    return `${item.content}\u0000document\u0000${item.document.id}\u0000${item.document.sha256}\u0000${item.document.index}`;
  return item.derived?.whenPrecision ? `${item.content}\u0000${item.derived.validFrom}` : item.content;
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
  // A document chunk is found by its document's title and its section's headings, as a Markdown chunk by its headings.
  if (item.document)
    return [item.document.title, item.document.section, ...(item.tags ?? [])].filter(Boolean).join("\n");
  return [item.filePath, ...(item.tags ?? [])].filter(Boolean).join(" ");
}

/**
 * A document chunk's context: its item's (path and tags), then the Markdown headings it sits under (chunking.ts), so
 * the fourth chunk of "# Deploy guide / ## Rollback" is found by "deploy rollback" though its own text names neither.
 */
export function withHeadings(context: string, chunk: TextChunk): string {
  return chunk.headings ? [context, chunk.headings.join(" / ")].filter(Boolean).join("\n") : context;
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
