import { and, desc, eq, isNull, type SQL, sql } from "drizzle-orm";
import type { QuotaOverrides } from "../config";
import { generateApiKey, hashApiKey, type Scope } from "../core/tenants/api-keys";
import { parseQuotaOverrides } from "../core/tenants/quotas";
import { randomId } from "../crypto";
import { apiKeys, tenants } from "../db/control-schema";
import { AppError, notFound } from "../errors";
import type { ControlDatabase } from "./control-db";

export interface Tenant {
  tenant_id: string;
  name: string;
  created_at: string;
  /** The data shard that holds what the tenant stores (its binding's name). */
  shard: string;
  /** The Vectorize index that holds its vectors (vector-indexes.ts); absent: VECTORIZE, or the local index. */
  vector_index?: string;
  /** Set while the tenant is being deleted (DELETE /admin/tenants/:tenant). */
  deleting_since?: string;
  /** The operator's quota overrides (PATCH /admin/tenants/:tenant); absent = the deployment's defaults. */
  quota_overrides?: QuotaOverrides;
}

export interface ApiKeyInfo {
  key_id: string;
  tenant_id: string;
  name: string;
  key_prefix: string;
  scopes: Scope[];
  projects: string[] | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** What authentication knows about the caller. */
export interface AuthenticatedKey {
  keyId: string;
  tenantId: string;
  scopes: Scope[];
  projects: string[] | null;
  lastUsedAt: number | null;
  /** The tenant's data shard when the key was read (the routing cache keeps it for ROUTE_TTL_MS). */
  shard: string;
  /** The tenant's quota overrides, read with the key (so cached with its route: no control round trip per write). */
  quotas: QuotaOverrides | null;
  /** The tenant's Vectorize index (binding name; null = VECTORIZE), read with the key like its shard. */
  vectorIndex: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * A new tenant on `shard`, its vectors in `vectorIndex` (null: the local index, or VECTORIZE); CONFLICT when the id is
 * taken (placement chooses both: placement.ts, vector-indexes.ts).
 */
export async function createTenant(
  db: ControlDatabase,
  input: { name: string; id?: string; shard: string; vectorIndex?: string | null },
): Promise<Tenant> {
  const createdAt = Date.now();
  const id = input.id ?? randomId("tn_");
  const vectorIndex = input.vectorIndex ?? null;
  const inserted = await db
    .insert(tenants)
    .values({ id, name: input.name, createdAt, shard: input.shard, vectorIndex })
    .onConflictDoNothing()
    .returning({ id: tenants.id });
  if (inserted.length === 0) throw new AppError("CONFLICT", `Tenant '${id}' already exists`, { tenant_id: id });
  return toTenant({ id, name: input.name, createdAt, deletingAt: null, shard: input.shard, vectorIndex });
}

export async function listTenants(db: ControlDatabase): Promise<Tenant[]> {
  const rows = await db.select().from(tenants).orderBy(tenants.createdAt);
  return rows.map(toTenant);
}

/** One tenant, or NOT_FOUND. */
export async function getTenant(db: ControlDatabase, tenantId: string): Promise<Tenant> {
  const row = await db.select().from(tenants).where(eq(tenants.id, tenantId)).get();
  if (!row) throw notFound(`Tenant '${tenantId}' does not exist`, { tenant_id: tenantId });
  return toTenant(row);
}

function toTenant(t: Omit<typeof tenants.$inferSelect, "quotas"> & { quotas?: string | null }): Tenant {
  const quotas = parseQuotaOverrides(t.quotas ?? null);
  return {
    tenant_id: t.id,
    name: t.name,
    created_at: iso(t.createdAt)!,
    shard: t.shard,
    ...(t.vectorIndex === null ? {} : { vector_index: t.vectorIndex }),
    ...(t.deletingAt === null ? {} : { deleting_since: iso(t.deletingAt)! }),
    ...(quotas === null ? {} : { quota_overrides: quotas }),
  };
}

/**
 * Sets or clears a tenant's quota overrides as a JSON merge patch, in one statement: a value sets the override,
 * null removes it (the default applies again), a quota left out keeps its override. NOT_FOUND for no such tenant.
 */
export async function patchTenantQuotas(
  db: ControlDatabase,
  tenantId: string,
  patch: Record<string, number | "unlimited" | null>,
): Promise<Tenant> {
  const row = await db
    .update(tenants)
    .set({ quotas: sql`NULLIF(json_patch(COALESCE(${tenants.quotas}, '{}'), ${JSON.stringify(patch)}), '{}')` })
    .where(eq(tenants.id, tenantId))
    .returning()
    .get();
  if (!row) throw notFound(`Tenant '${tenantId}' does not exist`, { tenant_id: tenantId });
  return toTenant(row);
}

export async function createApiKey(
  db: ControlDatabase,
  input: { tenantId: string; name: string; scopes: Scope[]; projects: string[] | null; secret?: string },
): Promise<ApiKeyInfo & { api_key: string }> {
  const tenant = await db
    .select({ id: tenants.id, deletingAt: tenants.deletingAt })
    .from(tenants)
    .where(eq(tenants.id, input.tenantId))
    .get();
  if (!tenant) throw notFound(`Tenant '${input.tenantId}' does not exist`, { tenant_id: input.tenantId });
  if (tenant.deletingAt !== null)
    throw new AppError("CONFLICT", `Tenant '${input.tenantId}' is being deleted`, { tenant_id: input.tenantId });
  const secret = input.secret ?? generateApiKey();
  const row = {
    id: randomId("key_"),
    tenantId: input.tenantId,
    name: input.name,
    keyHash: await hashApiKey(secret),
    keyPrefix: secret.slice(0, 10),
    scopes: JSON.stringify(input.scopes),
    projects: input.projects === null ? null : JSON.stringify(input.projects),
    createdAt: Date.now(),
  };
  await db.insert(apiKeys).values(row);
  return { ...toKeyInfo({ ...row, lastUsedAt: null, revokedAt: null }), api_key: secret };
}

export async function listApiKeys(db: ControlDatabase, tenantId: string): Promise<ApiKeyInfo[]> {
  const rows = await db.select().from(apiKeys).where(eq(apiKeys.tenantId, tenantId)).orderBy(desc(apiKeys.createdAt));
  return rows.map(toKeyInfo);
}

/** Revokes a key; `tenantId` confines a tenant admin to its own keys (the operator passes null). */
/** A key of a tenant (any state), or NOT_FOUND. */
export async function getApiKey(db: ControlDatabase, keyId: string, tenantId: string | null): Promise<ApiKeyInfo> {
  const where = tenantId === null ? eq(apiKeys.id, keyId) : and(eq(apiKeys.id, keyId), eq(apiKeys.tenantId, tenantId));
  const row = await db.select().from(apiKeys).where(where).get();
  if (!row) throw notFound(`API key '${keyId}' does not exist`, { key_id: keyId });
  return toKeyInfo(row);
}

export async function revokeApiKey(db: ControlDatabase, keyId: string, tenantId: string | null): Promise<ApiKeyInfo> {
  const where = tenantId === null ? eq(apiKeys.id, keyId) : and(eq(apiKeys.id, keyId), eq(apiKeys.tenantId, tenantId));
  const row = await db.select().from(apiKeys).where(where).get();
  if (!row) throw notFound(`API key '${keyId}' does not exist`, { key_id: keyId });
  const revokedAt = row.revokedAt ?? Date.now();
  if (row.revokedAt === null) await db.update(apiKeys).set({ revokedAt }).where(eq(apiKeys.id, keyId));
  return toKeyInfo({ ...row, revokedAt });
}

/** The unrevoked key whose secret this is, as authentication sees it. */
export async function findActiveKey(db: ControlDatabase, secret: string): Promise<AuthenticatedKey | null> {
  return findActiveKeyByHash(db, await hashApiKey(secret));
}

/** The unrevoked key with this secret hash (routing.ts hashes once and caches by hash). */
export function findActiveKeyByHash(db: ControlDatabase, keyHash: string): Promise<AuthenticatedKey | null> {
  return activeKeyWhere(db, eq(apiKeys.keyHash, keyHash));
}

/** An unrevoked key by id (OAuth tokens name their key); null when it is revoked or gone. */
export function findActiveKeyById(db: ControlDatabase, keyId: string): Promise<AuthenticatedKey | null> {
  return activeKeyWhere(db, eq(apiKeys.id, keyId));
}

/** One control round trip: the key and its tenant's shard (a tenant being deleted has no active key). */
async function activeKeyWhere(db: ControlDatabase, condition: SQL): Promise<AuthenticatedKey | null> {
  const row = await db
    .select({ key: apiKeys, shard: tenants.shard, quotas: tenants.quotas, vectorIndex: tenants.vectorIndex })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
    .where(and(condition, isNull(apiKeys.revokedAt), isNull(tenants.deletingAt)))
    .get();
  if (!row) return null;
  return {
    keyId: row.key.id,
    tenantId: row.key.tenantId,
    scopes: JSON.parse(row.key.scopes) as Scope[],
    projects: row.key.projects === null ? null : (JSON.parse(row.key.projects) as string[]),
    lastUsedAt: row.key.lastUsedAt,
    shard: row.shard,
    quotas: parseQuotaOverrides(row.quotas),
    vectorIndex: row.vectorIndex,
  };
}

export async function touchApiKey(db: ControlDatabase, keyId: string, now: number): Promise<void> {
  await db.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, keyId));
}

function toKeyInfo(row: typeof apiKeys.$inferSelect): ApiKeyInfo {
  return {
    key_id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    key_prefix: row.keyPrefix,
    scopes: JSON.parse(row.scopes) as Scope[],
    projects: row.projects === null ? null : (JSON.parse(row.projects) as string[]),
    created_at: iso(row.createdAt)!,
    last_used_at: iso(row.lastUsedAt),
    revoked_at: iso(row.revokedAt),
  };
}
