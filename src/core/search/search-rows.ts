import type { TenantScope } from "../../db/scope";
import { derivedSql } from "../memory/derived";
import { type ItemFilter, itemFilterSql } from "../memory/item-filters";

/** A chunk as search reads it, over `chunks c JOIN items i`. */
export type SearchRow = {
  chunk_id: number;
  chunk_index: number;
  chunk_content: string;
  chunk_tokens: number;
  item_id: string;
  project: string;
  kind: string;
  type: string;
  role: string | null;
  conversation_id: string | null;
  position: number | null;
  tags: string;
  metadata: string;
  importance: number;
  tier: string;
  created_at: number;
  /** Who said a message (its context's first line); null for other items. */
  speaker: string | null;
  /** The times the chunk's text states, resolved at write time (stated-times.ts); NULL for older rows. */
  stated_times: string | null;
  /** What relevance feedback scores the chunk from, in the worker (feedback-scores.ts). */
  fts_tokens: number | null;
  term_freqs: string | null;
  unindexed_context: string | null;
  /** A derived memory's kind, subject, validity and sources as JSON text (derived.ts); null for other items. */
  derived: string | null;
};

/** The columns of a SearchRow over `chunks c` and `items i`: name, and the expression when not `i.<name>`. */
const COLUMNS: [keyof SearchRow, string][] = (
  [
    ["chunk_id", "c.id"],
    ["chunk_index", "c.chunk_index"],
    ["chunk_content", "c.content"],
    ["chunk_tokens", "c.tokens"],
    ["item_id", "i.id"],
    ["project"],
    ["kind"],
    ["type"],
    ["role"],
    ["conversation_id"],
    ["position"],
    ["tags"],
    ["metadata"],
    ["importance"],
    ["tier"],
    ["created_at"],
    ["stated_times", "c.stated_times"],
    ["fts_tokens", "c.fts_tokens"],
    ["term_freqs", "c.term_freqs"],
    ["unindexed_context", "CASE WHEN c.term_freqs IS NULL THEN c.context END"],
    ["derived", derivedSql("i")],
    [
      "speaker",
      "CASE WHEN i.conversation_id IS NULL THEN NULL ELSE substr(c.context, 1, instr(c.context || char(10), char(10)) - 1) END",
    ],
  ] as [keyof SearchRow, string?][]
).map(([name, expression]) => [name, expression ?? `i.${name}`]);
export const SEARCH_ROW_COLUMNS = COLUMNS.map(([name, expression]) => `${expression} AS ${name}`).join(", ");

/**
 * A SearchRow as one JSON array value (read back with `searchRowFromJson`). A statement that returns many
 * rows of several shapes packs them into a few JSON values: D1's cost grows with the values it sends
 * (a NULL costs as much as a number), and SQLite writes JSON in C.
 */
export const SEARCH_ROW_JSON = `json_array(${COLUMNS.map(([name, expression]) => (name === "importance" ? exactReal(expression) : expression)).join(", ")})`;

/** SEARCH_ROW_JSON over a table of SearchRow columns by name (`alias`), such as a walk's rows in a CTE. */
export function searchRowJsonOf(alias: string): string {
  return `json_array(${COLUMN_NAMES.map((name) => (name === "importance" ? exactReal(`${alias}.${name}`) : `${alias}.${name}`)).join(", ")})`;
}

export function searchRowFromJson(values: unknown[]): SearchRow {
  // A loop, not Object.fromEntries over mapped pairs, which costs more a row, and a search reads many such rows.
  const row: Record<string, unknown> = {};
  for (let i = 0; i < COLUMN_NAMES.length; i++) row[COLUMN_NAMES[i]!] = values[i];
  row.importance = Number(row.importance);
  return row as SearchRow;
}
const COLUMN_NAMES = COLUMNS.map(([name]) => name);

/**
 * A REAL as JSON text that reads back as the same double (Number()): SQLite's JSON writes 15 significant
 * digits in some versions, and 17 are needed; `%!.17g` gives them all. NULL stays NULL (printf makes it 0.0).
 */
export function exactReal(expression: string): string {
  return `CASE WHEN ${expression} IS NULL THEN NULL ELSE printf('%!.17g', ${expression}) END`;
}

/** Search filters: the shared item vocabulary; tiers default to the active working set. */
export type SearchFilters = ItemFilter;

/** The filters as SQL over `i`; searches look at active items unless told otherwise. */
/** The projects a search is limited to (its filter's, else the key's), or null for the whole tenant. */
export function searchedProjects(scope: TenantScope, filters: SearchFilters): readonly string[] | null {
  return filters.projects && filters.projects.length > 0 ? filters.projects : scope.projects;
}

export function searchFilterSql(scope: TenantScope, filters: SearchFilters): { sql: string; params: unknown[] } {
  return itemFilterSql(scope, { ...filters, tiers: filters.tiers ?? ["active"] });
}

/** A statement's anonymous `?` parameters numbered from `first`, so one list of values can serve several places. */
export function numbered(sql: string, first: number): string {
  let n = first;
  return sql.replace(/\?/g, () => `?${n++}`);
}
