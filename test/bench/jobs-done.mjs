import { localPendingItems } from "./local-d1.mjs";
import { dispatchMode, fireMinutePass, fireSweep, sleep } from "./worker.mjs";

/**
 * Until every item of the tenant is embedded and linked, read from the local D1 files rather than asked of the worker.
 * Where nothing moves for a minute, the 15-minute sweep is fired as production would run it: it re-sends the jobs of
 * items pending for 10 minutes, and the bench says so, since a job was lost.
 */
export async function jobsDone(tenant) {
  let fired = -Infinity;
  let last = "";
  let movedAt = performance.now();
  for (;;) {
    const pending = await localPendingItems(tenant.id);
    if (pending.embeddings === 0 && pending.links === 0) return;
    const seen = JSON.stringify(pending);
    if (seen !== last) [last, movedAt] = [seen, performance.now()];
    else if (performance.now() - movedAt > 60_000) {
      console.warn(`cost bench: ${seen} items of ${tenant.id} pending for a minute; firing the sweep`);
      await fireSweep();
      movedAt = performance.now();
    }
    // Per minute, the minute pass sends the jobs: fired here instead of waiting out the minute.
    if (dispatchMode() === "per-minute" && performance.now() - fired > 2000) {
      await fireMinutePass();
      fired = performance.now();
    }
    await sleep(250);
  }
}
