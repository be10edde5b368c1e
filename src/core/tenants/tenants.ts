import { and, desc, eq, isNull, type SQL } from "drizzle-orm";
import { generateApiKey, hashApiKey, type Scope } from "./api-keys";
import { randomId } from "../../crypto";
import type { Database } from "../../db/scope";
import { apiKeys, tenants } from "../../db/schema";
import { AppError, notFound } from "../../errors";

export interface Tenant {
  tenant_id: string;
  name: string;
  created_at: string;
  /** Set while the tenant is being deleted (DELETE /admin/tenants/:tenant). */
  deleting_since?: string;
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
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export async function createTenant(db: Database, name: string, id = randomId("tn_")): Promise<Tenant> {
  const createdAt = Date.now();
  await db.insert(tenants).values({ id, name, createdAt });
  return { tenant_id: id, name, created_at: iso(createdAt)! };
}

export async function listTenants(db: Database): Promise<Tenant[]> {
  const rows = await db.select().from(tenants).orderBy(tenants.createdAt);
  return rows.map((t) => ({ tenant_id: t.id, name: t.name, created_at: iso(t.createdAt)!, ...(t.deletingAt === null ? {} : { deleting_since: iso(t.deletingAt)! }) }));
}

export async function createApiKey(
  db: Database,
  input: { tenantId: string; name: string; scopes: Scope[]; projects: string[] | null; secret?: string },
): Promise<ApiKeyInfo & { api_key: string }> {
  const tenant = await db.select({ id: tenants.id, deletingAt: tenants.deletingAt }).from(tenants).where(eq(tenants.id, input.tenantId)).get();
  if (!tenant) throw notFound(`Tenant '${input.tenantId}' does not exist`, { tenant_id: input.tenantId });
  if (tenant.deletingAt !== null) throw new AppError("CONFLICT", `Tenant '${input.tenantId}' is being deleted`, { tenant_id: input.tenantId });
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

export async function listApiKeys(db: Database, tenantId: string): Promise<ApiKeyInfo[]> {
  const rows = await db.select().from(apiKeys).where(eq(apiKeys.tenantId, tenantId)).orderBy(desc(apiKeys.createdAt));
  return rows.map(toKeyInfo);
}

/** Revokes a key; `tenantId` confines a tenant admin to its own keys (the operator passes null). */
/** A key of a tenant (any state), or NOT_FOUND. */
export async function getApiKey(db: Database, keyId: string, tenantId: string | null): Promise<ApiKeyInfo> {
  const where = tenantId === null ? eq(apiKeys.id, keyId) : and(eq(apiKeys.id, keyId), eq(apiKeys.tenantId, tenantId));
  const row = await db.select().from(apiKeys).where(where).get();
  if (!row) throw notFound(`API key '${keyId}' does not exist`, { key_id: keyId });
  return toKeyInfo(row);
}

export async function revokeApiKey(db: Database, keyId: string, tenantId: string | null): Promise<ApiKeyInfo> {
  const where = tenantId === null ? eq(apiKeys.id, keyId) : and(eq(apiKeys.id, keyId), eq(apiKeys.tenantId, tenantId));
  const row = await db.select().from(apiKeys).where(where).get();
  if (!row) throw notFound(`API key '${keyId}' does not exist`, { key_id: keyId });
  const revokedAt = row.revokedAt ?? Date.now();
  if (row.revokedAt === null) await db.update(apiKeys).set({ revokedAt }).where(eq(apiKeys.id, keyId));
  return toKeyInfo({ ...row, revokedAt });
}

/** The unrevoked key whose secret this is, as authentication sees it. */
export async function findActiveKey(db: Database, secret: string): Promise<AuthenticatedKey | null> {
  return activeKeyWhere(db, eq(apiKeys.keyHash, await hashApiKey(secret)));
}

/** An unrevoked key by id (OAuth tokens name their key); null when it is revoked or gone. */
export function findActiveKeyById(db: Database, keyId: string): Promise<AuthenticatedKey | null> {
  return activeKeyWhere(db, eq(apiKeys.id, keyId));
}

async function activeKeyWhere(db: Database, condition: SQL): Promise<AuthenticatedKey | null> {
  const row = await db.select().from(apiKeys).where(and(condition, isNull(apiKeys.revokedAt))).get();
  if (!row) return null;
  return {
    keyId: row.id,
    tenantId: row.tenantId,
    scopes: JSON.parse(row.scopes) as Scope[],
    projects: row.projects === null ? null : (JSON.parse(row.projects) as string[]),
    lastUsedAt: row.lastUsedAt,
  };
}

export async function touchApiKey(db: Database, keyId: string, now: number): Promise<void> {
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

export interface TenantStats {
  tenant_id: string;
  items: number;
  stashed_items: number;
  chunks: number;
  conversations: number;
  /** Items whose embed job has not finished yet (vector search does not see them). */
  pending_embeddings: number;
  /** Embedded items the auto-link job has not linked yet. */
  pending_links: number;
  tool_calls: number;
}

/** Counts for an operator: what a tenant stores and how far background embedding has got. */
export async function tenantStats(d1: D1Database, tenantId: string): Promise<TenantStats> {
  const count = (sql: string) => d1.prepare(sql).bind(tenantId);
  const [items, chunks, conversations, calls] = await d1.batch<Record<string, number>>([
    count("SELECT COUNT(*) AS items, SUM(tier = 'stashed') AS stashed, SUM(embedded_at IS NULL) AS pending, SUM(linked_at IS NULL) AS unlinked FROM items WHERE tenant_id = ?"),
    count("SELECT COUNT(*) AS n FROM chunks WHERE tenant_id = ?"),
    count("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ?"),
    count("SELECT COUNT(*) AS n FROM tool_calls WHERE tenant_id = ?"),
  ]);
  const row = items!.results[0]!;
  return {
    tenant_id: tenantId,
    items: row.items ?? 0,
    stashed_items: row.stashed ?? 0,
    chunks: chunks!.results[0]!.n ?? 0,
    conversations: conversations!.results[0]!.n ?? 0,
    pending_embeddings: row.pending ?? 0,
    pending_links: row.unlinked ?? 0,
    tool_calls: calls!.results[0]!.n ?? 0,
  };
}
