import { addUnits, type BillableUnits, noUnits, shareOf, type UnitMeter } from "../billable-units";
import { liveTenantShards } from "../control/routing";
import { shardDatabase } from "../control/shards";
import { DEPLOYMENT, usageBuffer } from "../control/usage-buffer";
import { recordUsage } from "../core/tenants/usage-log";
import { remainingQueries } from "../db/invocation-queries";
import { unmetered } from "../db/metered-d1";
import type { Env } from "../env";
import type { JobRunRecord } from "../messages";
import type { OpenedTenant } from "../open-tenant";
import { labelWork } from "../work-labels";

/** A group of jobs that ran as one (or work for a tenant that is no job of its: a dead letter), and what it spent. */
interface Run {
  kinds: readonly string[];
  startedAt: number;
  failed: boolean;
  units: BillableUnits;
}

/** What a queue batch spent outside its tenants' runs (reading their routes, logging) is recorded as this job. */
export const JOB_QUEUE_WORK = "job_queue";

/**
 * What a queue batch's jobs spent, per tenant: each group of jobs runs charged to its own units (a merged group's
 * messages share them), and once the batch is done each tenant's records go to the usage log. The batch's env charges
 * `meter` (metered-env.ts): what was spent outside any run (the control query for the batch's routes, and the one
 * before logging) is shared by the batch's records, or, when nothing was run for a tenant, is the deployment's.
 */
export class JobUsage {
  private readonly tenants = new Map<string, { tenant: OpenedTenant; runs: Run[] }>();
  /** Units spent for a tenant before its jobs ran (its share of embedding calls shared by the batch, a retry's read). */
  private readonly carried = new Map<string, BillableUnits>();

  constructor(private readonly meter: UnitMeter) {}

  /** Runs `work` for the jobs charged to fresh units; a job that throws is recorded as failed, and the error rethrown. */
  run<T>(tenant: OpenedTenant, jobs: readonly { type: string }[], work: () => Promise<T>): Promise<T> {
    return this.charged(
      tenant,
      jobs.map((job) => job.type),
      work,
    );
  }

  /** Runs `work` for the tenant recorded as one run of `kind` (work that is no job: a dead letter's record). */
  extra<T>(tenant: OpenedTenant, kind: string, work: () => Promise<T>): Promise<T> {
    return this.charged(tenant, [kind], work);
  }

  /** Runs `work` charged to the tenant's latest run (a job's failure record is that job's cost). */
  async chargeLastRun<T>(tenant: OpenedTenant, work: () => Promise<T>): Promise<T> {
    const last = this.tenants.get(tenant.scope.tenantId)?.runs.at(-1);
    return last ? this.meter.charging(last.units, work) : this.extra(tenant, JOB_QUEUE_WORK, work);
  }

  /** Units spent for the tenant outside its jobs, added to its next job's. */
  carry(tenantId: string, units: Partial<BillableUnits>): void {
    this.carried.set(tenantId, addUnits(this.carried.get(tenantId) ?? noUnits(), units));
  }

  private async charged<T>(tenant: OpenedTenant, kinds: readonly string[], work: () => Promise<T>): Promise<T> {
    const tenantId = tenant.scope.tenantId;
    for (const name of kinds) labelWork({ tenantId, source: "job", name, project: null });
    const units = this.carried.get(tenantId) ?? noUnits();
    this.carried.delete(tenantId);
    const startedAt = Date.now();
    let failed = true;
    try {
      const result = await this.meter.charging(units, work);
      failed = false;
      return result;
    } finally {
      const entry = this.tenants.get(tenantId) ?? { tenant, runs: [] };
      entry.runs.push({ kinds, startedAt, failed, units });
      this.tenants.set(tenantId, entry);
    }
  }

  /**
   * Logs each tenant's records once their work (and what it left running) has ended, written straight to the
   * tenant's shard: the consumer is past its jobs, and a queue message a batch and tenant would cost three queue
   * operations, which on the Free plan (10,000 a day) run out long before D1's rows. As the usage consumer does, one
   * control query first: a tenant being deleted gets none; one frozen for a move, or whose write fails, or a batch
   * with no D1 queries left, goes to the isolate's usage buffer instead (services.usage), which writes it with its
   * next write. A failed record is logged: the jobs' work is done either way.
   */
  async send(env: Env): Promise<void> {
    const tenants = [...this.tenants.values()];
    this.tenants.clear();
    const direct = tenants.length > 0 && remainingQueries() >= 1 + QUERIES_A_SHARD * tenants.length;
    const live = direct
      ? await liveTenantShards(
          env.CONTROL,
          tenants.map((t) => t.tenant.scope.tenantId),
        )
      : null;
    await this.meter.settled();
    const logged = tenants.map(({ tenant, runs }) => ({
      tenant,
      records: runs.flatMap(({ kinds, startedAt, failed, units }): JobRunRecord[] =>
        kinds.map((job) => ({ job, startedAt, failed, units: shareOf(units, kinds.length) })),
      ),
    }));
    await this.shareOverhead(
      env,
      logged.flatMap((t) => t.records),
    );
    // Each shard's tenants in one write (recordUsage takes many); the rest through the usage buffer.
    const byShard = new Map<string, typeof logged>();
    const queued: typeof logged = [];
    for (const entry of logged) {
      const place = live?.get(entry.tenant.scope.tenantId);
      if (live && place === undefined) continue;
      if (place && !place.frozen) byShard.set(place.shard, [...(byShard.get(place.shard) ?? []), entry]);
      else queued.push(entry);
    }
    for (const [shard, group] of byShard) {
      const requests = group.map(({ tenant, records }) => ({
        tenantId: tenant.scope.tenantId,
        calls: [],
        jobs: records,
      }));
      // The write's own cost is the usage log's (recordUsage charges it to its tenants).
      await recordUsage(unmetered(shardDatabase(env, shard)), requests).catch((error) => {
        console.error(`usage log write for jobs on ${shard} failed; sending it instead`, error);
        queued.push(...group);
      });
    }
    for (const { tenant, records } of queued) {
      await tenant.services.usage
        .record(tenant.scope.tenantId, [], records)
        .catch((error) => console.error("usage log send for jobs failed", error));
    }
  }

  /** The batch's units outside any run, shared by its records; with none, the deployment's (usage-buffer.ts). */
  private async shareOverhead(env: Env, records: readonly JobRunRecord[]): Promise<void> {
    const overhead = this.meter.takeOwn();
    if (records.length === 0) {
      await usageBuffer
        .addOverhead(env, DEPLOYMENT, JOB_QUEUE_WORK, overhead)
        ?.catch((error) => console.error("recording a queue batch's own work failed", error));
      return;
    }
    for (const record of records) addUnits(record.units, shareOf(overhead, records.length));
  }
}

/** D1 queries a shard's direct write takes (recordUsage: its batch, then its own cost); plus the control query. */
const QUERIES_A_SHARD = 2;
