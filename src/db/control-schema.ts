import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

// The control database (binding CONTROL, migrations/control): who the tenants are, their keys, which data
// shard holds each tenant, and what no single shard owns. Everything a tenant stores lives in its shard
// (schema.ts). All timestamps are epoch milliseconds.

export const tenants = sqliteTable(
  "tenants",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull(),
    /**
     * Set when deletion starts (src/core/ownership/delete-tenant.ts), when its keys are revoked; refreshed
     * by each deletion job, so the cron sweep resumes only a deletion that stalled.
     */
    deletingAt: integer("deleting_at"),
    /** The data shard (its binding name, e.g. SHARD_0) that holds everything the tenant stores. */
    shard: text("shard").notNull(),
    /**
     * JSON: the operator's per-tenant quota overrides ({"max_items": 5000, "calls_per_minute": "unlimited", ...});
     * NULL = the deployment's defaults (src/config.ts, src/core/tenants/quotas.ts). Read with the tenant's keys, so
     * the routing cache carries it and a write pays no control round trip.
     */
    quotas: text("quotas"),
    /**
     * The Vectorize index (its binding's name, e.g. VECTORIZE_1) that holds the tenant's vectors, chosen when the
     * tenant is created (src/control/vector-indexes.ts) and never changed: a move between shards leaves its vectors
     * where they are. NULL = VECTORIZE, the first index (tenants created before there could be more than one, and
     * deployments on the local index, which lives in the tenant's shard).
     */
    vectorIndex: text("vector_index"),
  },
  (t) => [index("tenants_shard").on(t.shard)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    name: text("name").notNull(),
    /** SHA-256 of the secret, hex. The secret itself is never stored. */
    keyHash: text("key_hash").notNull(),
    /** First characters of the secret, so an operator can tell keys apart. */
    keyPrefix: text("key_prefix").notNull(),
    /** JSON array of "read" | "write" | "admin". */
    scopes: text("scopes").notNull(),
    /** JSON array of project names the key may touch; NULL means every project. */
    projects: text("projects"),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_hash").on(t.keyHash), index("api_keys_tenant").on(t.tenantId)],
);

/** Jobs that exhausted their retries (dead-lettered), for an operator to inspect and replay; every shard's. */
export const jobFailures = sqliteTable(
  "job_failures",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    tenantId: text("tenant_id"),
    messageId: text("message_id").notNull(),
    jobType: text("job_type").notNull(),
    body: text("body").notNull(),
    attempts: integer("attempts").notNull(),
    lastError: text("last_error"),
    failedAt: integer("failed_at").notNull(),
  },
  (t) => [uniqueIndex("job_failures_message").on(t.messageId)],
);

/**
 * A tenant's move between shards (src/control/moves.ts): one row per tenant, its latest move. `state`:
 * copying (rows copied while writes go on) -> switching (the source refuses the tenant's writes; a second pass
 * copies what changed and verifies counts and checksums per table) -> purging (the map points at the target;
 * the source's rows are deleted once no isolate can still route there) -> done; or failed. `step` counts
 * progress writes, so two runners never both advance one move.
 */
export const tenantMoves = sqliteTable("tenant_moves", {
  tenantId: text("tenant_id").primaryKey(),
  source: text("source").notNull(),
  target: text("target").notNull(),
  state: text("state").notNull(),
  /** JSON: where the current pass stands (src/control/move-copy.ts). */
  progress: text("progress").notNull(),
  copied: integer("copied").notNull().default(0),
  total: integer("total").notNull().default(0),
  /** JSON: rows and checksum per table on both sides, once verified. */
  verified: text("verified"),
  error: text("error"),
  step: integer("step").notNull().default(0),
  startedAt: integer("started_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
  switchedAt: integer("switched_at"),
  finishedAt: integer("finished_at"),
});
