import { sha256Hex } from "../../crypto";
import { IN_JSON, type TenantScope } from "../../db/scope";
import { utf8Bytes } from "../../shared/utf8";
import {
  limitsStorage,
  NO_USAGE,
  type TenantUsage,
  type tenantLimits,
  usageOf,
  usageStatement,
} from "../tenants/quotas";
import type { ItemRecord } from "./import-schemas";

// What an import will write, read before any write.

/** Items per D1 batch (their chunks and keyword rows travel as JSON arrays). */
export const ITEMS_PER_BATCH = 200;

/** Which of the sorted items an import writes, and what they add to the tenant's usage. */
export interface ItemPlan {
  /** Per item: written (true) or skipped (its id, or the same content in its project, is there already). */
  write: boolean[];
  hashes: string[];
  adding: number;
  bytes: number;
  limits: ReturnType<typeof tenantLimits>;
  usage: TenantUsage;
}

/**
 * Every read of an import before any write, one batch a page as the writes go (so no more round trips than
 * reading page by page between writes): ids already there, and content already stored in the same project
 * (and key), which is not written again. The tenant's usage row rides in the first page's batch. An id or a
 * content the file holds twice is written once.
 */
export async function planItems(
  scope: TenantScope,
  items: ItemRecord[],
  newId: (id: string) => string,
  projectOf: (p: string) => string,
  limits: ReturnType<typeof tenantLimits>,
  dedupeInput: (item: ItemRecord) => string = (item) => item.content,
): Promise<ItemPlan> {
  const plan: ItemPlan = { write: [], hashes: [], adding: 0, bytes: 0, limits, usage: NO_USAGE };
  const storedContent = new Set<string>();
  const planned = new Set<string>();
  for (let i = 0; i < items.length; i += ITEMS_PER_BATCH) {
    const page = items.slice(i, i + ITEMS_PER_BATCH);
    const ids = page.map((item) => newId(item.id));
    const hashes = await Promise.all(page.map((item) => sha256Hex(dedupeInput(item))));
    const withUsage = i === 0 && limitsStorage(limits);
    const [byId, byContent, usage] = await scope.d1.batch<Record<string, string | null>>([
      scope.d1
        .prepare(`SELECT id FROM items WHERE id ${IN_JSON} AND +tenant_id = ?`)
        .bind(JSON.stringify(ids), scope.tenantId),
      // Stored content is one item per project (and key): a copy already there is not written again.
      scope.d1
        .prepare(
          `SELECT project, key, content_hash FROM items WHERE tenant_id = ? AND project ${IN_JSON} AND conversation_id IS NULL AND tier <> 'superseded' AND content_hash ${IN_JSON}`,
        )
        .bind(
          scope.tenantId,
          JSON.stringify([...new Set(page.map((item) => projectOf(item.project)))]),
          JSON.stringify(hashes),
        ),
      ...(withUsage ? [usageStatement(scope.d1, scope.tenantId)] : []),
    ]);
    if (withUsage) plan.usage = usageOf(usage);
    const present = new Set(byId!.results.map((r) => r.id));
    for (const r of byContent!.results) storedContent.add(`${r.project}\u0000${r.key ?? ""}\u0000${r.content_hash}`);
    for (const [k, item] of page.entries()) {
      const content = `${projectOf(item.project)}\u0000${item.key ?? ""}\u0000${hashes[k]}`;
      const deduplicated = item.conversation_id === null && item.tier !== "superseded";
      const write = !present.has(ids[k]!) && !planned.has(ids[k]!) && !(deduplicated && storedContent.has(content));
      if (write) {
        planned.add(ids[k]!);
        if (deduplicated) storedContent.add(content);
        plan.adding++;
        plan.bytes += utf8Bytes(item.content);
      }
      plan.write.push(write);
      plan.hashes.push(hashes[k]!);
    }
  }
  return plan;
}
