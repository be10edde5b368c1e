import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import type { Tier } from "./item-types";

/**
 * The one filter vocabulary over items, shared by search (memory_search, search, ...) and the working
 * set (context_stash, context_search_stashed, ...). An absent or empty list is no constraint.
 */
export interface ItemFilter {
  /** Projects to look in; absent = every project the caller may touch. */
  projects?: readonly string[];
  kinds?: readonly string[];
  types?: readonly string[];
  roles?: readonly string[];
  tiers?: readonly Tier[];
  conversationId?: string;
  taskId?: string;
  /** The item's file path, or a path ending in "/" + this (relative paths match absolute ones). */
  filePath?: string;
  /** Items carrying any of these tags. */
  tags?: readonly string[];
  /** Epoch ms, inclusive, on created_at. */
  createdAfter?: number;
  createdBefore?: number;
  /**
   * What held at this instant (epoch ms): items that were true then (valid_from, else created_at, at or before it)
   * and not yet replaced (valid_to after it), superseded ones included; absent: what holds now (by tier).
   */
  asOf?: number;
}

/** The tag prefix that names a task snapshot (context_create_task_snapshot). */
export const SNAPSHOT_TAG_PREFIX = "snapshot:";

export interface FilterOptions {
  /** A tag `snapshot:<id>` also matches every segment that snapshot captured (the working set's rule). */
  snapshotTags?: boolean;
}

/**
 * The filter as " AND ..." SQL over items aliased `i`, always within the scope's projects. Lists travel
 * as one JSON parameter each, so a statement's parameter count stays constant whatever the lists hold.
 */
export function itemFilterSql(
  scope: TenantScope,
  filter: ItemFilter,
  options: FilterOptions = {},
): { sql: string; params: unknown[] } {
  const visible = projectClause(scope, "i.project");
  const clauses: string[] = [];
  const params: unknown[] = [...visible.params];
  const anyOf = (column: string, values: readonly unknown[] | undefined) => {
    if (!values || values.length === 0) return;
    clauses.push(`${column} ${IN_JSON}`);
    params.push(JSON.stringify(values));
  };
  const equals = (column: string, value: string | undefined) => {
    if (value === undefined) return;
    clauses.push(`${column} = ?`);
    params.push(value);
  };
  anyOf("i.project", filter.projects);
  anyOf("i.kind", filter.kinds);
  anyOf("i.type", filter.types);
  anyOf("i.role", filter.roles);
  // A superseded item held until its valid_to: as of an earlier time it is one of the answers.
  anyOf(
    "i.tier",
    filter.asOf !== undefined && filter.tiers ? [...new Set([...filter.tiers, "superseded"])] : filter.tiers,
  );
  if (filter.asOf !== undefined) {
    clauses.push(
      "COALESCE(i.valid_from, i.created_at) <= ? AND (i.valid_to IS NULL OR i.valid_to > ?) AND (i.tier <> 'superseded' OR i.valid_to IS NOT NULL)",
    );
    params.push(filter.asOf, filter.asOf);
  }
  equals("i.conversation_id", filter.conversationId);
  equals("i.task_id", filter.taskId);
  if (filter.filePath !== undefined) {
    clauses.push("(i.file_path = ? OR (length(i.file_path) > length(?) AND substr(i.file_path, -length(?)) = ?))");
    const suffix = `/${filter.filePath.replace(/^\/+/, "")}`;
    params.push(filter.filePath, suffix, suffix, suffix);
  }
  if (filter.createdAfter !== undefined) {
    clauses.push("i.created_at >= ?");
    params.push(filter.createdAfter);
  }
  if (filter.createdBefore !== undefined) {
    clauses.push("i.created_at <= ?");
    params.push(filter.createdBefore);
  }
  if (filter.tags && filter.tags.length > 0) {
    const tags = JSON.stringify(filter.tags);
    const own = `EXISTS (SELECT 1 FROM json_each(i.tags) t WHERE t.value ${IN_JSON})`;
    const snapshotTags = options.snapshotTags ? filter.tags.filter((t) => t.startsWith(SNAPSHOT_TAG_PREFIX)) : [];
    if (snapshotTags.length === 0) {
      clauses.push(own);
      params.push(tags);
    } else {
      // A snapshot stands for the segments it captured (its metadata.segment_ids).
      clauses.push(
        `(${own} OR i.id IN (SELECT j.value FROM items s, json_each(s.metadata, '$.segment_ids') j
           WHERE s.tenant_id = ? AND s.kind = 'snapshot' AND EXISTS (SELECT 1 FROM json_each(s.tags) st WHERE st.value ${IN_JSON})))`,
      );
      params.push(tags, scope.tenantId, JSON.stringify(snapshotTags));
    }
  }
  return { sql: visible.sql + clauses.map((c) => ` AND ${c}`).join(""), params };
}
