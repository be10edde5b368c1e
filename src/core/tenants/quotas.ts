import { QUOTA_NAMES, type QuotaDefaults, type QuotaName, type QuotaOverrides } from "../../config";
import { quotaExceeded } from "../../errors";

/**
 * Per-tenant quotas, so that one tenant cannot exhaust a shard (docs/limits.md "Tenant quotas"):
 *
 * - max_items, max_bytes: what the tenant stores (items, and the UTF-8 bytes of their content). A write that would
 *   take the tenant past either is refused whole, before anything is written.
 * - max_pending_jobs: items awaiting embedding (embedded_at IS NULL), the tenant's share of the job queue. A write
 *   that would take it past is refused as retryable: the backlog drains as the embed jobs run.
 * - calls_per_minute: tool calls across all the tenant's keys (src/auth/middleware.ts, TENANT_RATE_LIMITER).
 *
 * Usage comes from tenant_usage, one row a tenant kept by triggers on items (migrations/shard/0013), read in the
 * batch of reads a write makes anyway: no COUNT(*) and no extra round trip. Two writes racing past the same read
 * can together overshoot a quota by one call's items; the next write sees the sum.
 */

/** A tenant's limits, the deployment's defaults with the operator's overrides; null = unlimited. */
export type TenantLimits = Record<QuotaName, number | null>;

export interface TenantUsage {
  items: number;
  bytes: number;
  pendingJobs: number;
}

export const NO_USAGE: TenantUsage = { items: 0, bytes: 0, pendingJobs: 0 };

/** Seconds a caller refused for the job backlog waits before retrying. */
export const BACKLOG_RETRY_SECONDS = 30;

/**
 * The limits that apply to a tenant. calls_per_minute is what TENANT_RATE_LIMITER enforces: its limit divided by
 * a whole charge per call (callWeight), so an override is rounded down to the nearest value it can enforce, and
 * no tenant gets more than the binding's limit.
 */
export function tenantLimits(defaults: QuotaDefaults, overrides: QuotaOverrides | null | undefined): TenantLimits {
  const pick = (name: QuotaName, fallback: number | null) => {
    const set = overrides?.[name];
    return set === undefined ? fallback : set === "unlimited" ? null : set;
  };
  const perMinute = pick("calls_per_minute", defaults.calls_per_minute);
  return {
    max_items: pick("max_items", defaults.max_items),
    max_bytes: pick("max_bytes", defaults.max_bytes),
    max_pending_jobs: pick("max_pending_jobs", defaults.max_pending_jobs),
    extraction_neurons_per_day: pick("extraction_neurons_per_day", defaults.extraction_neurons_per_day),
    calls_per_minute:
      perMinute === null
        ? null
        : Math.ceil(defaults.calls_per_minute / callWeight(defaults.calls_per_minute, perMinute)),
  };
}

/**
 * Units of TENANT_RATE_LIMITER one tool call costs so that its limit (`ceiling` a minute) admits at most
 * `perMinute` calls: the binding admits a charge while the count is below its limit, so `w` a call admits
 * ceil(ceiling / w) calls, and the smallest w for which that is ≤ perMinute is ceil(ceiling / perMinute).
 */
export function callWeight(ceiling: number, perMinute: number): number {
  return Math.max(1, Math.ceil(ceiling / Math.max(1, perMinute)));
}

/** The tenant's usage row (zeros when it has stored nothing on this shard). */
export function usageStatement(d1: D1Database, tenantId: string): D1PreparedStatement {
  return d1.prepare("SELECT items, bytes, pending_jobs FROM tenant_usage WHERE tenant_id = ?").bind(tenantId);
}

export function usageOf(result: D1Result<unknown> | undefined): TenantUsage {
  const row = result?.results[0] as { items: number; bytes: number; pending_jobs: number } | undefined;
  return row ? { items: row.items, bytes: row.bytes, pendingJobs: row.pending_jobs } : NO_USAGE;
}

/** Whether a write needs the usage row at all (a tenant with every storage quota lifted does not). */
export function limitsStorage(limits: TenantLimits): boolean {
  return limits.max_items !== null || limits.max_bytes !== null || limits.max_pending_jobs !== null;
}

/**
 * Refuses a write of `adding` new items (`bytes` of content) that would take the tenant past a quota, with an
 * error naming it, its limit, the usage and what the call adds. Storage first: retrying cannot help there.
 */
export function checkStorageQuotas(
  limits: TenantLimits,
  usage: TenantUsage,
  adding: { items: number; bytes: number },
): void {
  if (adding.items === 0) return;
  const nothing = "Nothing was written";
  const full = "delete items or ask the operator to raise the quota";
  if (limits.max_items !== null && usage.items + adding.items > limits.max_items) {
    throw quotaExceeded(
      `Tenant quota exceeded: items stored (max_items) is ${n(limits.max_items)}; the tenant stores ${n(usage.items)} and this call adds ${n(adding.items)}. ${nothing}; ${full}.`,
      { quota: "max_items", limit: limits.max_items, usage: usage.items, adding: adding.items, retryable: false },
    );
  }
  if (limits.max_bytes !== null && usage.bytes + adding.bytes > limits.max_bytes) {
    throw quotaExceeded(
      `Tenant quota exceeded: bytes stored (max_bytes) is ${n(limits.max_bytes)}; the tenant stores ${n(usage.bytes)} bytes of content and this call adds ${n(adding.bytes)}. ${nothing}; ${full}.`,
      { quota: "max_bytes", limit: limits.max_bytes, usage: usage.bytes, adding: adding.bytes, retryable: false },
    );
  }
  const backlog = limits.max_pending_jobs;
  if (backlog !== null && usage.pendingJobs + adding.items > backlog) {
    const alone = adding.items > backlog;
    throw quotaExceeded(
      `Tenant quota exceeded: background backlog (max_pending_jobs) is ${n(backlog)} items awaiting embedding; the tenant has ${n(usage.pendingJobs)} and this call adds ${n(adding.items)}. ${nothing}; ` +
        (alone
          ? `this call alone is over the quota: split it into calls of at most ${n(backlog)} items.`
          : `retry after ${BACKLOG_RETRY_SECONDS} seconds, as the backlog drains (reads work meanwhile).`),
      {
        quota: "max_pending_jobs",
        limit: backlog,
        usage: usage.pendingJobs,
        adding: adding.items,
        retryable: !alone,
        ...(alone ? {} : { retry_after_seconds: BACKLOG_RETRY_SECONDS }),
      },
    );
  }
}

/** Each quota with the tenant's usage, as stats and get_usage_report show them (limit null = unlimited). */
export interface QuotaReport {
  max_items: { limit: number | null; usage: number };
  max_bytes: { limit: number | null; usage: number };
  max_pending_jobs: { limit: number | null; usage: number };
  /**
   * usage: the tenant's mean tool calls a minute over the current UTC hour, from the usage log's hourly aggregates (it
   * lags up to FLUSH_AFTER_MS). TENANT_RATE_LIMITER enforces the limit, not this figure.
   */
  calls_per_minute: { limit: number | null; usage: number };
  /** usage: neurons the tenant's extraction has spent since 00:00 UTC (src/core/extraction/budget.ts). */
  extraction_neurons_per_day: { limit: number | null; usage: number };
}

/**
 * Three statements for a batch the caller makes anyway: the usage row, the calls of the last minute and the neurons
 * extraction spent today.
 */
export function quotaReportStatements(d1: D1Database, tenantId: string, now = Date.now()): D1PreparedStatement[] {
  return [
    usageStatement(d1, tenantId),
    d1
      .prepare(
        "SELECT COALESCE(SUM(calls), 0) AS n FROM usage_hours WHERE tenant_id = ? AND hour = ? AND source = 'tool'",
      )
      .bind(tenantId, now - (now % HOUR_MS)),
    neuronsSpentStatement(d1, tenantId, now),
  ];
}

/** The neurons a tenant's extraction windows spent since 00:00 UTC of `now`'s day. */
export function neuronsSpentStatement(d1: D1Database, tenantId: string, now: number): D1PreparedStatement {
  return d1
    .prepare("SELECT COALESCE(SUM(neurons), 0) AS n FROM extraction_windows WHERE tenant_id = ? AND created_at >= ?")
    .bind(tenantId, utcDayStart(now));
}

/** 00:00 UTC of the day of `now` (epoch ms). */
export function utcDayStart(now: number): number {
  return now - (now % 86_400_000);
}

const HOUR_MS = 3_600_000;

export function quotaReport(
  limits: TenantLimits,
  [usage, calls, neurons]: D1Result<unknown>[],
  now = Date.now(),
): QuotaReport {
  const used = usageOf(usage);
  const thisHour = (calls?.results[0] as { n: number } | undefined)?.n ?? 0;
  // The hour's calls over its minutes so far (a whole minute at least).
  const perMinute = Math.round(thisHour / Math.max(1, Math.ceil((now % HOUR_MS) / 60_000)));
  const spent = (neurons?.results[0] as { n: number } | undefined)?.n ?? 0;
  return {
    max_items: { limit: limits.max_items, usage: used.items },
    max_bytes: { limit: limits.max_bytes, usage: used.bytes },
    max_pending_jobs: { limit: limits.max_pending_jobs, usage: used.pendingJobs },
    calls_per_minute: { limit: limits.calls_per_minute, usage: perMinute },
    extraction_neurons_per_day: { limit: limits.extraction_neurons_per_day, usage: spent },
  };
}

/** Overrides as stored (JSON in CONTROL tenants.quotas); anything unrecognised is dropped. */
export function parseQuotaOverrides(json: string | null): QuotaOverrides | null {
  if (json === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const out: QuotaOverrides = {};
  for (const name of QUOTA_NAMES) {
    const v = (value as Record<string, unknown>)[name];
    if (v === "unlimited" || (typeof v === "number" && Number.isSafeInteger(v) && v > 0)) out[name] = v;
  }
  return Object.keys(out).length > 0 ? out : null;
}

/** 100000 -> "100,000". */
function n(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
