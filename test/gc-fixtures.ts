import { expect } from "vitest";
import { call, type RpcResponse, tenantDb } from "./helpers";

// Setup and checks shared by the working set, GC, stash and task tool tests (test/gc-*.test.ts).

const HOUR = 3_600_000;

/** Every row a statement returns. */
export async function all<T = Record<string, unknown>>(
  db: D1Database,
  sql: string,
  ...params: unknown[]
): Promise<T[]> {
  return (
    await db
      .prepare(sql)
      .bind(...params)
      .all<T>()
  ).results;
}

/** The first row a statement returns (the caller knows there is one). */
export async function one<T = Record<string, unknown>>(db: D1Database, sql: string, ...params: unknown[]): Promise<T> {
  return (await db
    .prepare(sql)
    .bind(...params)
    .first<T>())!;
}

/** Makes segments look untouched (and created) `hours` ago: test setup for age-based scoring. */
export async function age(db: D1Database, ids: string[], hours: number): Promise<void> {
  for (const id of ids)
    await db
      .prepare("UPDATE items SET touched_at = touched_at - ?, created_at = created_at - ? WHERE id = ?")
      .bind(hours * HOUR, hours * HOUR, id)
      .run();
}

/** Stores memories in a project in one batch; resolves with their ids, in order. */
export async function store(
  apiKey: string,
  project: string,
  memories: { content: string; type?: string; tags?: string[] }[],
): Promise<string[]> {
  return (await call(apiKey, "memory_batch_store", { namespace: project, memories })).ids;
}

/** Each item's GC state, to show that a refused call changed nothing. */
export async function itemSnapshot(tenantId: string) {
  return all<{ id: string; tier: string; pinned: number; gc_survival_count: number; generation: string }>(
    await tenantDb(tenantId),
    "SELECT id, tier, pinned, gc_survival_count, generation FROM items WHERE tenant_id = ? ORDER BY id",
    tenantId,
  );
}

/** The call failed with INVALID_PARAMETER naming `parameter` (and, when given, with that message). */
export function expectInvalid(response: RpcResponse, parameter: string, message?: string | RegExp): void {
  expect(response.error, JSON.stringify(response)).toBeDefined();
  expect(response.error!.code).toBe(-32602);
  expect(response.error!.data).toMatchObject({ code: "INVALID_PARAMETER", details: { parameter } });
  if (message) expect(response.error!.message).toMatch(message);
}

/** An ISO 8601 timestamp as the tools print them. */
export const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
