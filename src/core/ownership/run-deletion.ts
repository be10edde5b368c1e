import { QueryPieces } from "../../db/invocation-queries";
import { isQueryBudgetExceeded } from "../../errors";
import type { Services } from "../../ports";
import { deleteProjectStep } from "./delete-project";
import { deleteTenantStep, type ForgetKeys } from "./delete-tenant";
import type { DeletionStores } from "./deletion-steps";

/** A tenant (project null) or one of its projects. */
export interface DeletionTarget {
  tenantId: string;
  project: string | null;
}

export interface DeletionRun {
  done: boolean;
  steps: number;
  removed: number;
}

/**
 * Runs up to `maxSteps` bounded steps of a deletion; the caller queues the rest when it is not done.
 * An unfinished run records its progress time, so the cron sweep resumes only deletions that stalled.
 */
export async function runDeletionSteps(
  stores: DeletionStores,
  services: Services,
  target: DeletionTarget,
  forgetKeys: ForgetKeys,
  maxSteps: number,
): Promise<DeletionRun> {
  let removed = 0;
  let steps = 0;
  // D1's queries per invocation: a step starts only while the budget covers one as large as the largest so far
  // (and the progress write after the last); a step the budget cuts off is simply run again by the next job.
  const pieces = new QueryPieces(STEP_QUERIES);
  try {
    while (steps < maxSteps && (steps === 0 || pieces.fits())) {
      pieces.start();
      try {
        const step =
          target.project === null
            ? await deleteTenantStep(stores, services, target.tenantId, forgetKeys)
            : await deleteProjectStep(stores.data, services, target.tenantId, target.project);
        steps++;
        removed += step.removed;
        if (step.done) return { done: true, steps, removed };
      } finally {
        pieces.finish();
      }
    }
  } catch (error) {
    // Nothing left to record progress with: the job queued next resumes (what is left is the state).
    if (isQueryBudgetExceeded(error) && steps > 0) return { done: false, steps, removed };
    throw error;
  }
  const now = Date.now();
  if (target.project === null)
    await stores.control.prepare("UPDATE tenants SET deleting_at = ? WHERE id = ?").bind(now, target.tenantId).run();
  else
    await stores.data
      .prepare("UPDATE project_deletions SET updated_at = ? WHERE tenant_id = ? AND project = ?")
      .bind(now, target.tenantId, target.project)
      .run();
  return { done: false, steps, removed };
}

/** D1 queries a deletion step takes at least (QueryPieces learns larger ones), with the progress write after. */
const STEP_QUERIES = 6;
