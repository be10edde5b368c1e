import { getTableConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "../db/schema";

/** A shard table that holds tenants' rows, as a move copies, compares and deletes it. */
export interface TenantTable {
  name: string;
  /** Every column, in schema order; blobs travel as hex. */
  columns: { name: string; blob: boolean }[];
  /**
   * What identifies a row within its tenant and orders its pages: the primary key without tenant_id, or PAGE_KEYS';
   * [] for one row a tenant.
   */
  key: string[];
  /**
   * Rows that are only ever appended and whose key is the shard's own (tool_calls: an AUTOINCREMENT id that
   * nothing outside the shard names): copied in key order without the key, the target numbering them.
   */
  appendOnly: boolean;
}

/**
 * Shard tables with a tenant_id that a move does not copy: the fences are the move's own, and tenant_usage is
 * derived from items by triggers (moves.ts writes the source's row on the target at the switch). The posting blocks
 * are derived too, and the target's minute pass builds them anew (keyword-index/block-pass.ts: a tenant it has not
 * seen gets a first build); the tenant's searches read every posting meanwhile.
 */
export const NOT_MOVED = new Set([
  "tenant_fences",
  "tenant_usage",
  "keyword_blocks",
  "keyword_block_changes",
  "keyword_block_scans",
]);

/**
 * Keys other than the primary key, for tables whose primary key no index of theirs starts with tenant_id before:
 * a page ordered by it would walk and sort the tenant's whole index. Each is unique within a tenant and never changes
 * on a row: a link's edge (links_edge), a chunk's place in its item with its id (chunks_tenant_item, then the rowid).
 */
const PAGE_KEYS: Record<string, string[]> = {
  links: ["source_type", "source_id", "target_type", "target_id", "relationship_type"],
  chunks: ["item_id", "chunk_index", "id"],
};

/** Tables whose rows carry tenant_id, read from the drizzle schema, so a new tenant table is moved too. */
export const TENANT_TABLES_TO_MOVE: readonly TenantTable[] = Object.values(schema)
  .map((table) => getTableConfig(table as SQLiteTable))
  .filter((config) => !NOT_MOVED.has(config.name) && config.columns.some((c) => c.name === "tenant_id"))
  .map((config) => {
    const composite = config.primaryKeys[0]?.columns.map((c) => c.name);
    const key =
      PAGE_KEYS[config.name] ??
      (composite ?? config.columns.filter((c) => c.primary).map((c) => c.name)).filter((name) => name !== "tenant_id");
    return {
      name: config.name,
      columns: config.columns.map((c) => ({ name: c.name, blob: c.columnType === "SQLiteBlobBuffer" })),
      key,
      appendOnly: config.name === "tool_calls",
    };
  })
  // Items first, then chunks (their keyword rows travel with them), the rest in schema order.
  .sort((a, b) => rank(a.name) - rank(b.name));

function rank(name: string): number {
  return name === "items" ? 0 : name === "chunks" ? 1 : 2;
}
