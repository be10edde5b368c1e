import { addUnits, type BillableUnits, noUnits, shareOf } from "../billable-units";
import type { JobMessage, JobRunRecord } from "../messages";
import type { OpenedTenant } from "../open-tenant";

/**
 * What a queue batch's jobs spent, per tenant: each group of jobs runs charged to its own units (a merged group's
 * messages share them), and once the batch is done each tenant's records go to the usage log in one message.
 */
interface Run {
  jobs: readonly JobMessage[];
  startedAt: number;
  failed: boolean;
  units: BillableUnits;
}

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
   * Sends each tenant's records once their work (and what it left running) has ended; each record carries its share
   * of that one queue message. A failed send is logged: the jobs' work is done either way.
   */
  async send(): Promise<void> {
    for (const { tenant, runs } of this.tenants.values()) {
      await tenant.services.meter.settled();
      const records: JobRunRecord[] = runs.flatMap(({ jobs, startedAt, failed, units }) =>
        jobs.map((job) => ({ job: job.type, startedAt, failed, units: shareOf(units, jobs.length) })),
      );
      for (const record of records) record.units.queueSends += 1 / records.length;
      await tenant.services.usage
        .record(tenant.scope.tenantId, [], records)
        .catch((error) => console.error("usage log send for jobs failed", error));
    }
    this.tenants.clear();
  }
}
