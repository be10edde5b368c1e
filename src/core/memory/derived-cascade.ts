import type { TenantScope } from "../../db/scope";
import type { SegmentKey } from "../working-set/segments";
import { setSourcesStatement } from "./derived";

const IDS = "(SELECT value FROM json_each(?))";

/**
 * What deleting `ids` means for derived memories: those derived only from deleted items go too (`drop`), those with
 * other sources left keep them (`trim`: their sources without the deleted ones), and the provenance rows of both
 * directions (`sources`: every deleted item's own source ids, for memory_sources). One round trip.
 */
export async function derivedCascade(
  scope: TenantScope,
  ids: readonly string[],
): Promise<{ drop: SegmentKey[]; trim: { id: string; sources: string[] }[]; statements: D1PreparedStatement[] }> {
  const json = JSON.stringify(ids);
  const [fromThem, ownSources] = await scope.d1.batch<Record<string, string | number | null>>([
    scope.d1
      .prepare(
        `SELECT id, project, kind, tier, pinned, tokens, sources FROM items
         WHERE tenant_id = ?1 AND memory_kind IS NOT NULL
           AND id IN (SELECT memory_id FROM memory_sources WHERE tenant_id = ?1 AND source_id IN ${IDS.replace("?", "?2")})
           AND id NOT IN ${IDS.replace("?", "?2")}`,
      )
      .bind(scope.tenantId, json),
    scope.d1
      .prepare(`SELECT id, sources FROM items WHERE tenant_id = ? AND sources IS NOT NULL AND id IN ${IDS}`)
      .bind(scope.tenantId, json),
  ]);
  const deleted = new Set(ids);
  const drop: SegmentKey[] = [];
  const trim: { id: string; sources: string[] }[] = [];
  for (const row of fromThem!.results) {
    const sources = JSON.parse((row.sources as string | null) ?? "[]") as string[];
    const left = sources.filter((s) => !deleted.has(s));
    if (left.length === 0) {
      drop.push({
        id: row.id as string,
        project: row.project as string,
        kind: row.kind as string,
        tier: row.tier as string,
        pinned: row.pinned === 1,
        tokens: row.tokens as number,
        conversationId: null,
      });
    } else trim.push({ id: row.id as string, sources: left });
  }
  // Provenance rows: the deleted items' as sources, and every deleted derived memory's own (by their source ids).
  const memories = [...drop.map((d) => d.id), ...ownSources!.results.map((r) => r.id as string)];
  const theirSources = [
    ...drop.flatMap((d) => {
      const row = fromThem!.results.find((r) => r.id === d.id)!;
      return JSON.parse((row.sources as string | null) ?? "[]") as string[];
    }),
    ...ownSources!.results.flatMap((r) => JSON.parse(r.sources as string) as string[]),
  ];
  const statements: D1PreparedStatement[] = [
    scope.d1
      .prepare(`DELETE FROM memory_sources WHERE tenant_id = ? AND source_id IN ${IDS}`)
      .bind(scope.tenantId, json),
  ];
  if (memories.length > 0) {
    statements.push(
      scope.d1
        .prepare(`DELETE FROM memory_sources WHERE tenant_id = ? AND source_id IN ${IDS} AND memory_id IN ${IDS}`)
        .bind(scope.tenantId, JSON.stringify([...new Set(theirSources)]), JSON.stringify(memories)),
    );
  }
  if (trim.length > 0) statements.push(setSourcesStatement(scope, trim));
  return { drop, trim, statements };
}
