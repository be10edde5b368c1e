import { type BillableUnits, billsAnything, noUnits, UnitMeter } from "../billable-units";
import { addHourRows, type HourEntry, hourRows } from "../core/tenants/usage-hours";
import { meteredD1 } from "../db/metered-d1";
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

/** A write at most this often per isolate. */
const WRITE_EVERY_MS = 20_000;
/** Entries held at most before a write, whatever the time. */
const MAX_ENTRIES = 5_000;

type Bindings = ShardBindings & { CONTROL: D1Database };

/**
 * What requests spend outside their tool calls (a key looked up in the control database, the admin API, OAuth's
 * endpoints), kept in the isolate and written at most every WRITE_EVERY_MS in one statement per shard, so metering
 * a request that bills a row costs no row of its own each time. The write is made by the first request to end after
 * the interval (no timer keeps an invocation waiting). Each entry goes to its tenant's shard (read then, as the usage
 * consumer reads it: a tenant being deleted or gone has its entries go to the deployment, so no row outlives its
 * tenant; one frozen for a move waits for the next write), the deployment's to the first shard. What is held when the
 * isolate is evicted is lost: at most what came after its last write; a write that fails keeps its entries.
 */
export class OverheadUsage {
  private pending: HourEntry[] = [];
  private lastWrite = 0;
  private writing: Promise<void> | null = null;
  /** The last write's own cost, recorded by the next (a write of its own would never end). */
  private ownCost = noUnits();

  constructor(
    private readonly everyMs = WRITE_EVERY_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Adds units spent for `tenantId` (DEPLOYMENT for none) as one `name` run, when they bill anything; then writes
   * what is held if it is due. Returns the write, for the caller's waitUntil(), or null when none is due.
   */
  add(env: Bindings, tenantId: string, name: string, units: BillableUnits): Promise<void> | null {
    if (billsAnything(units))
      this.pending.push({ tenantId, at: this.now(), source: "job", name, project: null, failed: false, units });
    return this.writeIfDue(env);
  }

  /** Writes what is held once WRITE_EVERY_MS has passed since the last write (or too much is held). */
  writeIfDue(env: Bindings): Promise<void> | null {
    if (this.writing || this.pending.length === 0) return this.writing;
    if (this.pending.length < MAX_ENTRIES && this.now() - this.lastWrite < this.everyMs) return null;
    this.writing = this.write(env).finally(() => {
      this.writing = null;
    });
    return this.writing;
  }

  /** Writes what is held now (tests call it; otherwise `add` writes when due). */
  async write(env: Bindings): Promise<void> {
    const entries = this.pending;
    this.pending = [];
    this.lastWrite = this.now();
    const home = shardNames(env)[0];
    if (entries.length === 0 || home === undefined) return;
    const cost = noUnits();
    const meter = new UnitMeter();
    try {
      await meter.charging(cost, () => this.writeEntries(env, home, meter, entries));
    } catch (error) {
      console.error("usage outside tool calls: reading its tenants' shards failed; kept for the next write", error);
      this.pending.push(...entries);
    }
    this.ownCost = cost;
  }

  private async writeEntries(env: Bindings, home: string, meter: UnitMeter, entries: HourEntry[]): Promise<void> {
    const tenants = [...new Set(entries.map((e) => e.tenantId).filter((id) => id !== DEPLOYMENT))];
    const live = tenants.length > 0 ? await liveTenantShards(meteredD1(env.CONTROL, meter), tenants) : new Map();
    const byShard = new Map<string, HourEntry[]>();
    for (const entry of [...entries, this.ownCostEntry()]) {
      if (entry === null) continue;
      const place = entry.tenantId === DEPLOYMENT ? { shard: home, frozen: false } : live.get(entry.tenantId);
      if (place?.frozen) {
        this.pending.push(entry);
        continue;
      }
      const routed = place ? entry : { ...entry, tenantId: DEPLOYMENT };
      const shard = place?.shard ?? home;
      byShard.set(shard, [...(byShard.get(shard) ?? []), routed]);
    }
    for (const [shard, group] of byShard) {
      try {
        await addHourRows(meteredD1(shardDatabase(env, shard), meter), hourRows(group)).run();
      } catch (error) {
        console.error(`usage outside tool calls: the write to ${shard} failed; kept for the next`, error);
        this.pending.push(...group.filter((entry) => entry.name !== OVERHEAD.log));
      }
    }
  }

  private ownCostEntry(): HourEntry | null {
    const units = this.ownCost;
    this.ownCost = noUnits();
    if (!billsAnything(units)) return null;
    return {
      tenantId: DEPLOYMENT,
      at: this.now(),
      source: "job",
      name: OVERHEAD.log,
      project: null,
      failed: false,
      units,
    };
  }
}

/** The isolate's one buffer. */
export const overheadUsage = new OverheadUsage();
