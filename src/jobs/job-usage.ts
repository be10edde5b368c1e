import { addUnits, type BillableUnits, noUnits, shareOf } from "../billable-units";
import { liveTenantShards } from "../control/routing";
import { shardDatabase } from "../control/shards";
import { recordUsage } from "../core/tenants/usage-log";
import { remainingQueries } from "../db/invocation-queries";
import type { Env } from "../env";
import type { JobMessage, JobRunRecord } from "../messages";
import type { OpenedTenant } from "../open-tenant";

/** A group of jobs that ran as one, and what it spent. */
interface Run {
  jobs: readonly JobMessage[];
  startedAt: number;
  failed: boolean;
  units: BillableUnits;
}

/**
 * What a queue batch's jobs spent, per tenant: each group of jobs runs charged to its own units (a merged group's
 * messages share them), and once the batch is done each tenant's records go to the usage log.
 */
export class JobUsage {
  private readonly tenants = new Map<string, { tenant: OpenedTenant; runs: Run[] }>();
  /** Units spent for a tenant before its jobs ran (its share of embedding calls shared by the batch). */
  private readonly carried = new Map<string, BillableUnits>();

  /** Runs `work` for the jobs charged to fresh units; a job that throws is recorded as failed, and the error rethrown. */
  async run<T>(tenant: OpenedTenant, jobs: readonly JobMessage[], work: () => Promise<T>): Promise<T> {
    const tenantId = tenant.scope.tenantId;
    const units = this.carried.get(tenantId) ?? noUnits();
    this.carried.delete(tenantId);
    const startedAt = Date.now();
    let failed = true;
    try {
      const result = await tenant.services.meter.charging(units, work);
      failed = false;
      return result;
    } finally {
      const entry = this.tenants.get(tenantId) ?? { tenant, runs: [] };
      entry.runs.push({ jobs, startedAt, failed, units });
      this.tenants.set(tenantId, entry);
    }
  }

  /** Units spent for the tenant outside its jobs, added to its next job's. */
  carry(tenantId: string, units: BillableUnits): void {
    this.carried.set(tenantId, addUnits(this.carried.get(tenantId) ?? noUnits(), units));
  }

  /**
   * Logs each tenant's records once their work (and what it left running) has ended, written straight to the
   * tenant's shard: the consumer is past its jobs, and a queue message a batch and tenant would cost three queue
   * operations, which on the Free plan (10,000 a day) run out long before D1's rows. As the usage consumer does, one
   * control query first: a tenant being deleted gets none; one frozen for a move, or whose write fails, or a batch
   * with no D1 queries left, goes through the usage queue instead (each record then carries its share of that
   * message). A failed send is logged: the jobs' work is done either way.
   */
  async send(env: Env): Promise<void> {
    const tenants = [...this.tenants.values()];
    this.tenants.clear();
    if (tenants.length === 0) return;
    const direct = remainingQueries() >= 1 + QUERIES_A_SHARD * tenants.length;
    const live = direct
      ? await liveTenantShards(
          env.CONTROL,
          tenants.map((t) => t.tenant.scope.tenantId),
        )
      : null;
    // Each shard's tenants in one write (recordUsage takes many); the rest through the queue.
    const byShard = new Map<string, { tenant: OpenedTenant; records: JobRunRecord[] }[]>();
    const queued: { tenant: OpenedTenant; records: JobRunRecord[] }[] = [];
    for (const { tenant, runs } of tenants) {
      await tenant.services.meter.settled();
      const records: JobRunRecord[] = runs.flatMap(({ jobs, startedAt, failed, units }) =>
        jobs.map((job) => ({ job: job.type, startedAt, failed, units: shareOf(units, jobs.length) })),
      );
      const place = live?.get(tenant.scope.tenantId);
      if (live && place === undefined) continue;
      if (place && !place.frozen) byShard.set(place.shard, [...(byShard.get(place.shard) ?? []), { tenant, records }]);
      else queued.push({ tenant, records });
    }
    for (const [shard, group] of byShard) {
      const requests = group.map(({ tenant, records }) => ({
        tenantId: tenant.scope.tenantId,
        calls: [],
        jobs: records,
      }));
      await recordUsage(shardDatabase(env, shard), requests).catch((error) => {
        console.error(`usage log write for jobs on ${shard} failed; sending it instead`, error);
        queued.push(...group);
      });
    }
    for (const { tenant, records } of queued) {
      for (const record of records) record.units.queueSends += 1 / records.length;
      await tenant.services.usage
        .record(tenant.scope.tenantId, [], records)
        .catch((error) => console.error("usage log send for jobs failed", error));
    }
  }
}

/** D1 queries a shard's direct write takes (recordUsage: its batch, then its own cost); plus the control query. */
const QUERIES_A_SHARD = 2;
