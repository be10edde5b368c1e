import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

// What tenants spend and store on a shard: the usage log (tool_calls, usage_hours, tool_conversation_days) and each
// tenant's stored totals (tenant_usage). schema.ts re-exports them with every other shard table.

/** A row per failed tool call and per sampled one of the rest (control/usage-buffer.ts): for the dashboard's list. */
export const toolCalls = sqliteTable(
  "tool_calls",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    tenantId: text("tenant_id").notNull(),
    keyId: text("key_id").notNull(),
    tool: text("tool").notNull(),
    project: text("project"),
    conversationId: text("conversation_id"),
    startedAt: integer("started_at").notNull(),
    durationMs: real("duration_ms").notNull(),
    /** NULL when the call succeeded, else the error code. */
    errorCode: text("error_code"),
    /** D1 round trips before the answer (NULL for calls logged before this was counted). */
    d1RoundTrips: real("d1_round_trips"),
    d1Ms: real("d1_ms"),
  },
  (t) => [
    index("tool_calls_tenant_time").on(t.tenantId, t.startedAt),
    index("tool_calls_tenant_tool").on(t.tenantId, t.tool, t.startedAt),
    index("tool_calls_tenant_conversation").on(t.tenantId, t.conversationId).where(sql`conversation_id IS NOT NULL`),
  ],
);

/**
 * Billable units by hour, summed per tenant, tool or job kind, and project ('' when none): one row a group, so a
 * queue batch of the usage log adds one row write a group however many calls it holds. The `*_hist` columns are
 * JSON objects {value: count} of each call's rows read and written, in bins of ~5 % (usage-hours.ts), for p95.
 */
export const usageHours = sqliteTable(
  "usage_hours",
  {
    tenantId: text("tenant_id").notNull(),
    hour: integer("hour").notNull(),
    /** 'tool' or 'job'. */
    source: text("source").notNull(),
    name: text("name").notNull(),
    project: text("project").notNull(),
    calls: integer("calls").notNull(),
    errors: integer("errors").notNull(),
    d1RoundTrips: real("d1_round_trips").notNull(),
    /** Time waited on D1, summed (the worker's own time is the rest: worker_hist). */
    d1Ms: real("d1_ms").notNull().default(0),
    d1RowsRead: real("d1_rows_read").notNull(),
    d1RowsWritten: real("d1_rows_written").notNull(),
    localRowsRead: real("local_rows_read").notNull(),
    localRowsWritten: real("local_rows_written").notNull(),
    kvReads: real("kv_reads").notNull(),
    kvWrites: real("kv_writes").notNull(),
    kvDeletes: real("kv_deletes").notNull(),
    kvLists: real("kv_lists").notNull(),
    queueSends: real("queue_sends").notNull(),
    /** Billed operations (a message's write, read and delete per 64 KB, retries, dead letters): queue_sends x 3 or more. */
    queueOperations: real("queue_operations").notNull().default(0),
    aiNeurons: real("ai_neurons").notNull(),
    /** R2 operations on documents' originals (Class A: writes and lists; Class B: reads). */
    r2ClassA: real("r2_class_a").notNull().default(0),
    r2ClassB: real("r2_class_b").notNull().default(0),
    /** Worker CPU milliseconds from the platform's trace of each invocation (jobs/cpu-time.ts), and the calls they cover. */
    cpuMs: real("cpu_ms").notNull().default(0),
    cpuCalls: real("cpu_calls").notNull().default(0),
    readHist: text("read_hist").notNull(),
    writtenHist: text("written_hist").notNull(),
    /** Tool calls' durations in the fixed buckets of latency-histogram.ts {upper bound ms: count}: p50 and p95. */
    latencyHist: text("latency_hist").notNull().default("{}"),
    /** The same less each call's D1 wait: the worker's own time. */
    workerHist: text("worker_hist").notNull().default("{}"),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.hour, t.source, t.name, t.project] })],
);

/**
 * Tool calls by the conversation their arguments name, summed per tenant, tool, conversation, project ('' when none)
 * and UTC day: exact counts for get_tool_conversations, which tool_calls (failed calls and a sample) cannot give. A
 * call that names no conversation adds nothing.
 */
export const toolConversationDays = sqliteTable(
  "tool_conversation_days",
  {
    tenantId: text("tenant_id").notNull(),
    tool: text("tool").notNull(),
    conversationId: text("conversation_id").notNull(),
    project: text("project").notNull(),
    /** The UTC day's first millisecond. */
    day: integer("day").notNull(),
    calls: integer("calls").notNull(),
    /** The latest call's start (ms). */
    lastUsed: integer("last_used").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.tool, t.conversationId, t.project, t.day] })],
);

/**
 * What each tenant stores on this shard, one row a tenant, kept by triggers on items (migrations/shard/0013): the
 * items, the UTF-8 bytes of their content, and those not embedded yet (embedded_at IS NULL: the tenant's
 * background backlog). A write reads its tenant's row in the batch of reads it makes anyway, so quotas cost no
 * COUNT(*) and no round trip (src/core/tenants/quotas.ts). Derived, so a move does not copy it as a table (the
 * copy's INSERT OR REPLACE would count a replaced row twice): the switch writes the frozen source's row on the
 * target and the purge deletes it (src/control/moves.ts).
 */
export const tenantUsage = sqliteTable("tenant_usage", {
  tenantId: text("tenant_id").primaryKey(),
  items: integer("items").notNull().default(0),
  bytes: integer("bytes").notNull().default(0),
  pendingJobs: integer("pending_jobs").notNull().default(0),
});
