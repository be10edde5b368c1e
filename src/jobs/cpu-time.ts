import { noUnits } from "../billable-units";
import { shardNames } from "../control/shards";
import { DEPLOYMENT, OVERHEAD, type UsageBindings, usageBuffer } from "../control/usage-buffer";
import type { HourEntry } from "../core/tenants/usage-hours";
import { WORK_CHANNEL, type WorkLabel } from "../work-labels";
import { JOB_QUEUE_WORK } from "./job-usage";
import { carryToNextPass, PASSES_JOB } from "./pass-usage";

/**
 * The Worker's tail handler (wrangler.toml's tail_consumers names the Worker itself; the platform does not tail a tail
 * invocation): each trace carries the invocation's CPU milliseconds, which the invocation itself cannot measure, and
 * the labels it published (work-labels.ts). The time is shared equally among the labels, or given to what the
 * invocation was when it has none (a page, a scheduled pass, a queue batch's own work), and summed into usage_hours
 * through the isolate's usage buffer as units that count no call, riding on a write made anyway (the buffer's `late`
 * entries). Returns the buffer's write when one is scheduled, for waitUntil().
 */
export function recordCpuTime(traces: readonly TraceItem[], env: UsageBindings): Promise<void> | null {
  const entries = traces.flatMap(cpuEntries);
  // A cron's time goes with the passes' next record on the first shard (pass-usage.ts), which is written anyway: at
  // rest, recording it costs no row.
  const passes = entries.filter((entry) => entry.tenantId === DEPLOYMENT && entry.name === PASSES_JOB);
  const first = shardNames(env)[0];
  if (first !== undefined) for (const entry of passes) carryToNextPass(first, entry.units);
  return usageBuffer.add(
    env,
    entries.filter((entry) => !passes.includes(entry)),
    [],
    true,
  );
}

/** One trace's CPU time as usage_hours entries, one a label; none when it carries no timing (local workerd's). */
export function cpuEntries(trace: TraceItem): HourEntry[] {
  if (trace.cpuTime === 0 && trace.wallTime === 0) return [];
  const labels = traceLabels(trace);
  const at = trace.eventTimestamp ?? Date.now();
  const share = trace.cpuTime / labels.length;
  return labels.map(({ tenantId, source, name, project }) => ({
    tenantId,
    at,
    source,
    name,
    project,
    failed: false,
    units: { ...noUnits(), cpuMs: share, cpuCalls: 1 },
    calls: 0,
  }));
}

/** The labels that count: the calls and jobs, else the overheads, else what the event was. */
function traceLabels(trace: TraceItem): WorkLabel[] {
  const labels = trace.diagnosticsChannelEvents
    .filter((event) => event.channel === WORK_CHANNEL)
    .map((event) => workLabel(event.message))
    .filter((label) => label !== null);
  const work = labels.filter((label) => !label.overhead);
  if (work.length > 0) return work;
  if (labels.length > 0) return labels;
  return [{ tenantId: DEPLOYMENT, source: "job", name: eventName(trace.event), project: null }];
}

function eventName(event: TraceItem["event"]): string {
  if (event && "cron" in event) return PASSES_JOB;
  if (event && "queue" in event) return JOB_QUEUE_WORK;
  return OVERHEAD.requests;
}

/** A label as published, or null for anything else on the channel. */
function workLabel(message: unknown): WorkLabel | null {
  if (typeof message !== "object" || message === null) return null;
  const { tenantId, source, name, project, overhead } = message as Record<string, unknown>;
  if (typeof tenantId !== "string" || typeof name !== "string") return null;
  if (source !== "tool" && source !== "job") return null;
  if (project !== null && typeof project !== "string") return null;
  return { tenantId, source, name, project, ...(overhead === true ? { overhead } : {}) };
}
