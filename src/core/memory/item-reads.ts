import { allInOneTrip } from "../../db/one-trip";
import { IN_JSON, projectClause, type TenantScope } from "../../db/scope";
import { type DerivedView, derivedSql, parseDerived } from "./derived";

// Items read by id: whole, or just what background jobs need of them.

/** Ids per statement when the list travels as one JSON parameter (a read of more is one batch). */
const ITEMS_PER_READ = 500;

/** Full content of items by id (tenant-scoped). */
export async function readItemContents(scope: TenantScope, ids: string[]): Promise<Map<string, string>> {
  const rows = await itemRowsById<{ id: string; content: string }>(scope, "id, content", ids);
  return new Map(rows.map((row) => [row.id, row.content]));
}

/**
 * Rows of the items with these ids that the scope may see, in one round trip: a statement per
 * ITEMS_PER_READ ids (each list one JSON parameter), all in one batch.
 */
async function itemRowsById<Row>(scope: TenantScope, columns: string, ids: string[]): Promise<Row[]> {
  const visible = projectClause(scope, "project");
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < ids.length; i += ITEMS_PER_READ) {
    statements.push(
      scope.d1
        .prepare(`SELECT ${columns} FROM items WHERE +tenant_id = ? AND id ${IN_JSON}${visible.sql}`)
        .bind(scope.tenantId, JSON.stringify(ids.slice(i, i + ITEMS_PER_READ)), ...visible.params),
    );
  }
  return (await allInOneTrip<Row>(scope.d1, statements)).flatMap((result) => result.results);
}

export interface StoredItem {
  id: string;
  project: string;
  kind: string;
  type: string;
  content: string;
  tokens: number;
  importance: number;
  tier: string;
  conversationId: string | null;
  createdAt: number;
  /** A derived memory's kind, subject, validity and sources (derived.ts); null for a stored item. */
  derived: DerivedView | null;
}

/** What background jobs need of an item: not its content, which may be 100,000 characters. */
export type ItemHead = Pick<StoredItem, "id" | "project" | "kind" | "tokens" | "conversationId">;

/** Item heads by id (tenant-scoped), in one round trip; missing ids are absent from the map. */
export async function readItemHeads(scope: TenantScope, ids: string[]): Promise<Map<string, ItemHead>> {
  type Row = { id: string; project: string; kind: string; tokens: number; conversation_id: string | null };
  const rows = await itemRowsById<Row>(scope, "id, project, kind, tokens, conversation_id", ids);
  return new Map(
    rows.map((r) => [
      r.id,
      { id: r.id, project: r.project, kind: r.kind, tokens: r.tokens, conversationId: r.conversation_id },
    ]),
  );
}

/** Items by id (tenant-scoped); missing ids are absent from the map. */
export async function readItems(scope: TenantScope, ids: string[]): Promise<Map<string, StoredItem>> {
  type Row = {
    id: string;
    project: string;
    kind: string;
    type: string;
    content: string;
    tokens: number;
    importance: number;
    tier: string;
    conversation_id: string | null;
    created_at: number;
    derived: string | null;
  };
  const rows = await itemRowsById<Row>(
    scope,
    `id, project, kind, type, content, tokens, importance, tier, conversation_id, created_at, ${derivedSql("items")} AS derived`,
    ids,
  );
  return new Map(
    rows.map((r) => [
      r.id,
      {
        id: r.id,
        project: r.project,
        kind: r.kind,
        type: r.type,
        content: r.content,
        tokens: r.tokens,
        importance: r.importance,
        tier: r.tier,
        conversationId: r.conversation_id,
        createdAt: r.created_at,
        derived: parseDerived(r.derived),
      },
    ]),
  );
}
