import { forgetLocalVectors } from "../adapters/local-vector-index";
import { hashApiKey } from "../core/tenants/api-keys";
import { forgetBookmarks } from "./bookmarks";
import { openControl } from "./control-db";
import { type AuthenticatedKey, findActiveKeyByHash, findActiveKeyById } from "./tenants";

/** Where a tenant lives: its data shard and its Vectorize index (null: VECTORIZE), as the control database says. */
export interface TenantRoute {
  tenantId: string;
  shard: string;
  vectorIndex: string | null;
}

/**
 * How long an isolate trusts what it read from the control database: a key (with its tenant's shard) and a
 * tenant's shard. A warm request pays no control round trip; revoking a key, deleting a tenant or moving one
 * reaches every isolate within this bound, and the isolate that made the change at once (forgetRoutes).
 * A write routed by a stale entry during a move cannot land: the source shard fences the tenant's writes
 * before the switch.
 */
export const ROUTE_TTL_MS = 15_000;
/** Entries an isolate keeps (oldest dropped first): ~300 bytes each, so at most ~3 MB of the 128 MB. */
const MAX_ENTRIES = 10_000;

class ExpiringMap<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V, now: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: now + ROUTE_TTL_MS });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  deleteWhere(test: (value: V) => boolean): void {
    for (const [key, entry] of this.entries) if (test(entry.value)) this.entries.delete(key);
  }
}

const keys = new ExpiringMap<AuthenticatedKey>();
const shards = new ExpiringMap<string>();
/** A tenant's Vectorize index (null = VECTORIZE), read with its key or its shard: it never changes while the tenant lives. */
const vectorIndexes = new ExpiringMap<string | null>();

/** The active key behind a secret, with its tenant's shard: from this isolate's cache, else one control query. */
export async function routeKey(
  control: D1Database,
  secret: string,
  now = Date.now(),
): Promise<AuthenticatedKey | null> {
  const hash = await hashApiKey(secret);
  const cached = keys.get(`hash:${hash}`, now);
  if (cached) return cached;
  const key = await findActiveKeyByHash(openControl(control), hash);
  if (key) remember(`hash:${hash}`, key, now);
  return key;
}

/** The active key with this id (OAuth tokens name their key), cached like routeKey. */
export async function routeKeyById(
  control: D1Database,
  keyId: string,
  now = Date.now(),
): Promise<AuthenticatedKey | null> {
  const cached = keys.get(`id:${keyId}`, now);
  if (cached) return cached;
  const key = await findActiveKeyById(openControl(control), keyId);
  if (key) remember(`id:${keyId}`, key, now);
  return key;
}

/**
 * The routes (shard and Vectorize index) of several tenants in one control query at most (a queue batch names a
 * few tenants); a tenant that no longer exists is absent from the map.
 */
export async function tenantRoutes(
  control: D1Database,
  tenantIds: readonly string[],
  now = Date.now(),
): Promise<Map<string, TenantRoute>> {
  const found = new Map<string, TenantRoute>();
  const missing: string[] = [];
  for (const tenantId of new Set(tenantIds)) {
    const shard = shards.get(tenantId, now);
    const vectorIndex = vectorIndexes.get(tenantId, now);
    if (shard === undefined || vectorIndex === undefined) missing.push(tenantId);
    else found.set(tenantId, { tenantId, shard, vectorIndex });
  }
  if (missing.length > 0) {
    const { results } = await control
      .prepare("SELECT id, shard, vector_index FROM tenants WHERE id IN (SELECT value FROM json_each(?))")
      .bind(JSON.stringify(missing))
      .all<{ id: string; shard: string; vector_index: string | null }>();
    for (const row of results) {
      shards.set(row.id, row.shard, now);
      vectorIndexes.set(row.id, row.vector_index, now);
      found.set(row.id, { tenantId: row.id, shard: row.shard, vectorIndex: row.vector_index });
    }
  }
  return found;
}

/**
 * Where tenants that exist and are not being deleted live, read now (no cache), and whether a move has frozen
 * their writes: the usage consumer writes nothing for a tenant whose deletion has begun (so no usage row
 * outlives its tenant) and waits out a frozen one.
 */
export async function liveTenantShards(
  control: D1Database,
  tenantIds: readonly string[],
): Promise<Map<string, { shard: string; frozen: boolean }>> {
  const { results } = await control
    .prepare(
      `SELECT t.id, t.shard, m.state = 'switching' AS frozen FROM tenants t LEFT JOIN tenant_moves m ON m.tenant_id = t.id
       WHERE t.id IN (SELECT value FROM json_each(?)) AND t.deleting_at IS NULL`,
    )
    .bind(JSON.stringify([...new Set(tenantIds)]))
    .all<{ id: string; shard: string; frozen: number | null }>();
  return new Map(results.map((r) => [r.id, { shard: r.shard, frozen: r.frozen === 1 }]));
}

/** One tenant's shard, or null when the tenant does not exist. */
export async function tenantShard(control: D1Database, tenantId: string, now = Date.now()): Promise<string | null> {
  return (await tenantRoutes(control, [tenantId], now)).get(tenantId)?.shard ?? null;
}

/**
 * A tenant's Vectorize index (its binding's name; null = VECTORIZE): cached with its key or shard, so a request or a
 * job pays no control round trip for it; else one query. A tenant that no longer exists has VECTORIZE's.
 */
export async function tenantVectorIndex(
  control: D1Database,
  tenantId: string,
  now = Date.now(),
): Promise<string | null> {
  const cached = vectorIndexes.get(tenantId, now);
  if (cached !== undefined) return cached;
  const row = await control
    .prepare("SELECT vector_index FROM tenants WHERE id = ?")
    .bind(tenantId)
    .first<{ vector_index: string | null }>();
  const index = row?.vector_index ?? null;
  if (row) vectorIndexes.set(tenantId, index, now);
  return index;
}

/** Drops what this isolate remembers of a tenant or a key, after changing it (revoke, delete, move). */
export function forgetRoutes(target: { tenantId?: string; keyId?: string }): void {
  keys.deleteWhere((key) => key.tenantId === target.tenantId || key.keyId === target.keyId);
  if (target.tenantId !== undefined) {
    shards.delete(target.tenantId);
    vectorIndexes.delete(target.tenantId);
    forgetBookmarks(target.tenantId);
    forgetLocalVectors(target.tenantId);
  }
}

function remember(cacheKey: string, key: AuthenticatedKey, now: number): void {
  keys.set(cacheKey, key, now);
  shards.set(key.tenantId, key.shard, now);
  vectorIndexes.set(key.tenantId, key.vectorIndex, now);
}
