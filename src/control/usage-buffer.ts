import { addUnits, type BillableUnits, billsAnything, noUnits, shareOf, UnitMeter } from "../billable-units";
import {
  addConversationDay,
  addConversationDays,
  type ConversationDay,
  type ConversationDays,
  countConversationCalls,
} from "../core/tenants/conversation-days";
import { addHourRows, type HourEntry, hourRows } from "../core/tenants/usage-hours";
import { toolCallStatements } from "../core/tenants/usage-log";
import { meteredD1 } from "../db/metered-d1";
import type { ToolCallRecord } from "../messages";
import { liveTenantShards } from "./routing";
import { type ShardBindings, shardDatabase, shardNames } from "./shards";

/**
 * The tenant id of work that is no tenant's: the deployment's (the scheduled passes record theirs under it too,
 * jobs/pass-usage.ts). Its rows live on the first shard.
 */
export const DEPLOYMENT = "";

/** Names of what is spent outside any tool call or job, as usage_hours keeps them (source 'job'). */
export const OVERHEAD = {
  /** A request's own work beside its tool calls: the key's lookup and last use, an OAuth token's read. */
  requests: "requests",
  admin: "admin",
  oauth: "oauth",
  /** What writing this log cost (its control read and its rows), recorded with the next write. */
  log: "usage_log",
} as const;

/** A write at most this long after the first entry it holds (FLUSH_USAGE_MS overrides it: tests). */
export const FLUSH_AFTER_MS = 20_000;
/** How long past its time a scheduled write that has not begun is taken for cancelled. */
export const STALE_AFTER_MS = 10_000;
/** Entries added `late` wait at most this long for a write that others schedule. */
export const LATE_WAIT_MS = 3_600_000;
/** Entries held at most before a write, whatever the time. */
const MAX_HELD = 5_000;
/** Of the calls that succeed, one in this many keeps a tool_calls row; every failed call keeps one. */
export const SAMPLE_EVERY = 50;

export type UsageBindings = ShardBindings & { CONTROL: D1Database; FLUSH_USAGE_MS?: string };

/** A call that keeps its own tool_calls row. */
interface CallRow {
  tenantId: string;
  call: ToolCallRecord;
}

/** What one write takes (or a shard's part of it). */
interface Held {
  entries: HourEntry[];
  calls: CallRow[];
  conversations: ConversationDay[];
}

/**
 * The usage log of an isolate: tool calls, jobs the consumer could not write itself, and what requests spend beside
 * their calls, held as hourly entries and written within FLUSH_AFTER_MS of the first held, in one batch a shard that
 * sums them into usage_hours (tenant x tool x hour, latency histogram included) and tool_conversation_days (each call
 * in the conversation it names, exactly) and writes the tool_calls rows of the failed calls and of a sample of the rest
 * (one in SAMPLE_EVERY). No queue message and no row a call: a busy tenant's
 * hour costs a row update a flush. The write is the caller's waitUntil() (add returns it): its timer keeps the
 * invocation that scheduled it alive until then. A write that has not begun STALE_AFTER_MS past its time was cancelled
 * with that invocation: the next call schedules another, so the isolate's usage is not held (and its callers left
 * waiting) behind a write that will never run. Each entry goes to its tenant's shard (read then: a tenant being
 * deleted or gone has its entries go to the deployment and its rows dropped, so none outlives it; one frozen for a move
 * is held for the next write), the deployment's to the first shard. What is held when the isolate is evicted is lost:
 * at most FLUSH_AFTER_MS of the isolate's calls (docs/costs.md); a write that fails keeps what it held.
 */
export class UsageBuffer {
  private entries: HourEntry[] = [];
  private calls: CallRow[] = [];
  private conversations: ConversationDays = new Map();
  private successes = 0;
  /** The write scheduled and not yet begun, and when it should begin. */
  private scheduled: { write: Promise<void>; own: { at: number } } | null = null;
  /** Each tenant's share of the last write's own cost, recorded with the next write (a write of its own would never end). */
  private ownCost = new Map<string, BillableUnits>();
  /** When the oldest entry added `late` and not yet written was added; null when none is held. */
  private lateSince: number | null = null;

  /**
   * Holds the entries, and the calls' rows that are kept (failed, or sampled); returns the write that will take them,
   * for the caller's waitUntil(), or null when nothing is held. Entries added `late` (units that arrive after their
   * call: CPU time) schedule no write of their own: they go with the next write others schedule, or once they have
   * waited LATE_WAIT_MS, so they add no write to a quiet isolate's.
   */
  add(
    env: UsageBindings,
    entries: readonly HourEntry[],
    calls: readonly CallRow[] = [],
    late = false,
  ): Promise<void> | null {
    this.entries.push(...entries);
    countConversationCalls(this.conversations, calls);
    for (const row of calls)
      if (row.call.errorCode !== null || this.successes++ % SAMPLE_EVERY === 0) this.calls.push(row);
    const now = Date.now();
    if (this.scheduled && now > this.scheduled.own.at + STALE_AFTER_MS) this.scheduled = null;
    const held = this.entries.length + this.calls.length + this.conversations.size;
    if (held === 0) return this.scheduled?.write ?? null;
    if (late && entries.length > 0) this.lateSince ??= now;
    const full = held >= MAX_HELD;
    const waitedEnough = this.lateSince !== null && now - this.lateSince >= LATE_WAIT_MS;
    if ((!this.scheduled && (!late || waitedEnough)) || full) {
      const ms = full ? 0 : flushAfter(env);
      const own = { at: now + ms };
      this.scheduled = { own, write: this.writeAfter(env, ms, own) };
    }
    return this.scheduled?.write ?? null;
  }

  /** Adds units spent for `tenantId` (DEPLOYMENT for none) beside its calls as one `name` run, when they bill anything. */
  addOverhead(env: UsageBindings, tenantId: string, name: string, units: BillableUnits): Promise<void> | null {
    if (!billsAnything(units)) return this.scheduled?.write ?? null;
    return this.add(env, [{ tenantId, at: Date.now(), source: "job", name, project: null, failed: false, units }]);
  }

  private async writeAfter(env: UsageBindings, ms: number, own: { at: number }): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    // What is added from now on is the next write's, scheduled by its own add (unless one was scheduled in its place).
    if (this.scheduled?.own === own) this.scheduled = null;
    await this.write(env);
  }

  /** Writes what is held now (tests call it; otherwise `add` schedules it). */
  async write(env: UsageBindings): Promise<void> {
    const [entries, calls, conversations] = [this.entries, this.calls, [...this.conversations.values()]];
    [this.entries, this.calls, this.conversations, this.lateSince] = [[], [], new Map(), null];
    const home = shardNames(env)[0];
    if (entries.length + calls.length + conversations.length === 0 || home === undefined) return;
    const held = [...this.takeOwnCost(), ...entries];
    const cost = noUnits();
    const meter = new UnitMeter();
    try {
      await meter.charging(cost, () => this.writeHeld(env, home, meter, { entries: held, calls, conversations }));
    } catch (error) {
      console.error("usage log: reading its tenants' shards failed; kept for the next write", error);
      this.keep({ entries: held, calls, conversations });
    }
    this.shareOwnCost(cost, held);
  }

  private async writeHeld(env: UsageBindings, home: string, meter: UnitMeter, held: Held): Promise<void> {
    const { entries, calls, conversations } = held;
    const tenants = [
      ...new Set([...entries, ...calls, ...conversations].map((e) => e.tenantId).filter((id) => id !== DEPLOYMENT)),
    ];
    const live = tenants.length > 0 ? await liveTenantShards(meteredD1(env.CONTROL, meter), tenants) : new Map();
    const byShard = new Map<string, Held>();
    const groupOf = (shard: string) =>
      byShard.get(shard) ?? byShard.set(shard, { entries: [], calls: [], conversations: [] }).get(shard)!;
    for (const entry of entries) {
      const place = entry.tenantId === DEPLOYMENT ? { shard: home, frozen: false } : live.get(entry.tenantId);
      if (place?.frozen) this.entries.push(entry);
      else if (place) groupOf(place.shard).entries.push(entry);
      else groupOf(home).entries.push({ ...entry, tenantId: DEPLOYMENT });
    }
    // A gone tenant's calls and conversations are dropped; a frozen one's wait for the next write.
    for (const row of calls) {
      const place = live.get(row.tenantId);
      if (place?.frozen) this.calls.push(row);
      else if (place) groupOf(place.shard).calls.push(row);
    }
    for (const row of conversations) {
      const place = live.get(row.tenantId);
      if (place?.frozen) addConversationDay(this.conversations, row);
      else if (place) groupOf(place.shard).conversations.push(row);
    }
    for (const [shard, group] of byShard) {
      const d1 = meteredD1(shardDatabase(env, shard), meter);
      const statements = [
        ...(group.entries.length > 0 ? [addHourRows(d1, hourRows(group.entries))] : []),
        ...addConversationDays(d1, group.conversations),
        ...toolCallStatements(d1, group.calls),
      ];
      if (statements.length === 0) continue;
      try {
        await d1.batch(statements);
      } catch (error) {
        console.error(`usage log: the write to ${shard} failed; kept for the next`, error);
        this.keep({ ...group, entries: group.entries.filter((entry) => entry.name !== OVERHEAD.log) });
      }
    }
  }

  private keep({ entries, calls, conversations }: Held): void {
    this.entries.push(...entries);
    this.calls.push(...calls);
    for (const row of conversations) addConversationDay(this.conversations, row);
  }

  /** The write's own cost (its control read, its rows), each tenant's by its share of the entries written. */
  private shareOwnCost(cost: BillableUnits, entries: readonly HourEntry[]): void {
    if (!billsAnything(cost) || entries.length === 0) return;
    const counts = new Map<string, number>();
    for (const entry of entries) counts.set(entry.tenantId, (counts.get(entry.tenantId) ?? 0) + 1);
    for (const [tenantId, n] of counts) {
      const share = shareOf(cost, entries.length / n);
      this.ownCost.set(tenantId, addUnits(this.ownCost.get(tenantId) ?? noUnits(), share));
    }
  }

  private takeOwnCost(): HourEntry[] {
    const at = Date.now();
    const entries = [...this.ownCost].map(([tenantId, units]) => ({
      tenantId,
      at,
      source: "job" as const,
      name: OVERHEAD.log,
      project: null,
      failed: false,
      units,
    }));
    this.ownCost.clear();
    return entries;
  }
}

function flushAfter(env: UsageBindings): number {
  const ms = Number(env.FLUSH_USAGE_MS);
  return env.FLUSH_USAGE_MS && Number.isFinite(ms) && ms >= 0 ? Math.min(ms, FLUSH_AFTER_MS) : FLUSH_AFTER_MS;
}

/** The isolate's one buffer. */
export const usageBuffer = new UsageBuffer();
