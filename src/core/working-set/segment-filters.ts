import type { TenantScope } from "../../db/scope";
import { invalidParameter } from "../../errors";
import { keywordCode, phraseMatch, queryPhrases } from "../../shared/fts-text";
import { type ItemFilter, itemFilterSql } from "../memory/item-filters";
import type { Tier } from "../memory/item-types";
import {
  REFCOUNT_SQL,
  SEGMENT_COLUMNS,
  type Segment,
  type SegmentRow,
  snapshotLinkCounts,
  snapshotLinkMap,
  toSegment,
  withoutSnapshotLinks,
} from "./segments";

/** Seed 004's metadata filters (context_stash, context_search_stashed, context_retrieve_stashed). */
export type SegmentFilter = Pick<
  ItemFilter,
  "filePath" | "taskId" | "tags" | "types" | "createdAfter" | "createdBefore"
>;

export interface SegmentSelection {
  /** Projects to look in; undefined = every project of the tenant. */
  projects?: string[];
  tiers: readonly Tier[];
  /** Words that must all occur in the segment's text (see keywordClauses). */
  query?: string;
  filter?: SegmentFilter;
  /**
   * The working-set rule: this task's segments plus segments that belong to no task. CURRENT_TASK
   * means the project's current task (context_set_current_task), read in the same query.
   */
  workingSetTask?: string | typeof CURRENT_TASK;
  /** Snapshot records are not context: the working set, stash and retrieve leave them out. */
  excludeSnapshots?: boolean;
}

/** The project's current task, whatever it is when the query runs (every segment when it has none). */
export const CURRENT_TASK = Symbol("the project's current task");

/** The current task of the selection's one project, as a scalar subquery with its parameters. */
function currentTaskSql(scope: TenantScope, selection: SegmentSelection): { sql: string; params: unknown[] } {
  if (selection.projects?.length !== 1) throw new Error("CURRENT_TASK needs a selection of exactly one project");
  return {
    sql: "(SELECT current_task_id FROM project_tasks WHERE tenant_id = ? AND project = ?)",
    params: [scope.tenantId, selection.projects[0]],
  };
}

/** Most query words a keyword match uses (each is one FTS5 lookup). */
export const MAX_KEYWORD_TERMS = 16;

/**
 * WHERE clauses (items aliased `i`) for a selection, tenant-scoped. Lists travel as one JSON parameter
 * each, so a selection never nears D1's 100 bound parameters (at most 2 per keyword term + 12).
 */
export function selectionWhere(scope: TenantScope, selection: SegmentSelection): { sql: string; params: unknown[] } {
  const filter = itemFilterSql(
    scope,
    { ...selection.filter, projects: selection.projects, tiers: selection.tiers },
    { snapshotTags: true },
  );
  const clauses = [`i.tenant_id = ?${filter.sql}`];
  const params: unknown[] = [scope.tenantId, ...filter.params];
  if (selection.excludeSnapshots) clauses.push("i.kind <> 'snapshot'");
  if (selection.workingSetTask === CURRENT_TASK) {
    // No current task: COALESCE falls back to the segment's own task, so every segment stays.
    const current = currentTaskSql(scope, selection);
    clauses.push(`(i.task_id IS NULL OR i.task_id = COALESCE(${current.sql}, i.task_id))`);
    params.push(...current.params);
  } else if (selection.workingSetTask !== undefined) {
    clauses.push("(i.task_id = ? OR i.task_id IS NULL)");
    params.push(selection.workingSetTask);
  }
  if (selection.query !== undefined) {
    for (const term of keywordTerms(scope.tenantId, selection.query)) {
      clauses.push(
        "i.id IN (SELECT c.item_id FROM chunks_fts f JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ? AND c.tenant_id = ?)",
      );
      params.push(`content : ${term}`, scope.tenantId);
    }
  }
  return { sql: clauses.join(" AND "), params };
}

/**
 * Keyword matching for stash and retrieval: every word of the query must occur in the segment's text
 * (in any of its chunks; FTS5 with the index's stemming, so "bugs" finds "bug"). AND, not BM25's OR,
 * because these calls move segments: "old documentation" must not stash everything that says "old".
 * Stopwords are dropped unless the query has nothing else; a query with no word at all is an error.
 */
export function keywordTerms(tenantId: string, query: string): string[] {
  const phrases = queryPhrases(query);
  if (phrases === null)
    throw invalidParameter("query", `Invalid parameter 'query': '${query.slice(0, 80)}' has no searchable words`);
  // The tenant's private terms; the plain ones find rows indexed before those (none once re-indexed,
  // and then the lookup finds an empty posting list).
  const code = keywordCode(tenantId);
  return phrases
    .slice(0, MAX_KEYWORD_TERMS)
    .map((phrase) => `(${phraseMatch(phrase, code)} OR ${phraseMatch(phrase, "")})`);
}

const ORDER = "ORDER BY i.touched_at DESC, i.id";

export interface SelectedSegments {
  /** Every match. */
  total: number;
  totalTokens: number;
  /** The first `limit` matches, most recently touched first. */
  segments: Segment[];
  /** The task the selection used: the one given, the project's current task for CURRENT_TASK, else null. */
  taskId: string | null;
}

/** Counts a selection and reads its first `limit` segments (refcounts only for those): one round trip. */
export async function selectSegments(
  scope: TenantScope,
  selection: SegmentSelection,
  limit: number,
): Promise<SelectedSegments> {
  const where = selectionWhere(scope, selection);
  const task =
    selection.workingSetTask === CURRENT_TASK ? currentTaskSql(scope, selection) : { sql: "NULL", params: [] };
  const [totals, page, snapshotLinks] = await scope.d1.batch<Record<string, unknown>>([
    scope.d1
      .prepare(
        `SELECT COUNT(*) AS n, COALESCE(SUM(i.tokens), 0) AS tokens, ${task.sql} AS task_id FROM items i WHERE ${where.sql}`,
      )
      .bind(...task.params, ...where.params),
    scope.d1
      // Materialized first, so refcounts are computed for the page only, not for every match.
      .prepare(
        `WITH page AS MATERIALIZED (SELECT * FROM items i WHERE ${where.sql} ${ORDER} LIMIT ?) SELECT ${SEGMENT_COLUMNS}, ${REFCOUNT_SQL} AS refcount FROM page i ${ORDER}`,
      )
      .bind(...where.params, limit),
    snapshotLinkCounts(scope, selection.projects),
  ]);
  const count = totals!.results[0] as { n: number; tokens: number; task_id: string | null };
  const fromSnapshots = snapshotLinkMap(snapshotLinks!.results);
  return {
    total: count.n,
    totalTokens: count.tokens,
    taskId: typeof selection.workingSetTask === "string" ? selection.workingSetTask : count.task_id,
    segments: (page!.results as SegmentRow[]).map((row) =>
      toSegment({ ...row, refcount: withoutSnapshotLinks(row.refcount, row.id, fromSnapshots) }),
    ),
  };
}

export interface SegmentBrief {
  id: string;
  project: string;
  tokens: number;
  pinned: boolean;
}

/** Every match of a selection, without text (what a bulk stash or restore needs). */
export async function selectSegmentBriefs(scope: TenantScope, selection: SegmentSelection): Promise<SegmentBrief[]> {
  const where = selectionWhere(scope, selection);
  const { results } = await scope.d1
    .prepare(`SELECT i.id, i.project, i.tokens, i.pinned FROM items i WHERE ${where.sql} ${ORDER}`)
    .bind(...where.params)
    .all<{ id: string; project: string; tokens: number; pinned: number }>();
  return results.map((r) => ({ id: r.id, project: r.project, tokens: r.tokens, pinned: r.pinned === 1 }));
}
