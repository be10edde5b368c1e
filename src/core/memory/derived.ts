import type { TenantScope } from "../../db/scope";
import type { MemoryKind, SaidBy, WhenPrecision } from "./item-types";

/** What a derived memory carries beside its text: its kind, subject, validity in time and source turns. */
export interface DerivedView {
  kind: MemoryKind;
  subject: string;
  validFrom: number | null;
  validTo: number | null;
  /** Item ids of the turns it came from. */
  sources: string[];
  /** Who said what it rests on when no user or system turn did; null: a user's or system's word. */
  saidBy: SaidBy | null;
  /** How much of its `when` was given (day, month or year); null: none. */
  whenPrecision: WhenPrecision | null;
}

/**
 * A derived item's fields as one JSON text (NULL for every other item), over the items table aliased `alias`: one
 * value a row where five would cost a search five (D1's answer grows with its values, NULLs included). `|| ''`
 * makes it text, so inside another json_array it stays one string.
 */
export function derivedSql(alias: string): string {
  const i = alias;
  return `CASE WHEN ${i}.memory_kind IS NULL THEN NULL ELSE json_array(${i}.memory_kind, ${i}.subject, ${i}.valid_from, ${i}.valid_to, json(COALESCE(${i}.sources, '[]')), ${i}.said_by, ${i}.when_precision) || '' END`;
}

/** One statement that sets derived memories' sources (each id with its new list). */
export function setSourcesStatement(scope: TenantScope, lists: readonly { id: string; sources: Iterable<string> }[]) {
  return scope.d1
    .prepare(
      `UPDATE items SET sources = (SELECT j.value ->> 1 FROM json_each(?2) j WHERE j.value ->> 0 = items.id)
       WHERE tenant_id = ?1 AND id IN (SELECT j.value ->> 0 FROM json_each(?2) j)`,
    )
    .bind(scope.tenantId, JSON.stringify(lists.map((l) => [l.id, JSON.stringify([...l.sources])])));
}

export function parseDerived(text: string | null | undefined): DerivedView | null {
  if (!text) return null;
  const [kind, subject, validFrom, validTo, sources, saidBy, whenPrecision] = JSON.parse(text) as [
    MemoryKind,
    string,
    number | null,
    number | null,
    string[],
    SaidBy | null | undefined,
    WhenPrecision | null | undefined,
  ];
  return { kind, subject, validFrom, validTo, sources, saidBy: saidBy ?? null, whenPrecision: whenPrecision ?? null };
}
