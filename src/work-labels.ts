// What an invocation worked for, told to the Worker's own tail handler (jobs/cpu-time.ts), which alone learns the
// invocation's CPU time: a Worker's clock stands still while it computes, so no call can time itself.
import { channel } from "node:diagnostics_channel";

/** The diagnostics channel the labels travel on; the tail handler reads them from the invocation's trace. */
export const WORK_CHANNEL = "context-edge.work";

/** A tool call or a job, as usage_hours keys it; `overhead` labels count only when an invocation has no other. */
export interface WorkLabel {
  tenantId: string;
  source: "tool" | "job";
  name: string;
  project: string | null;
  overhead?: true;
}

const work = channel(WORK_CHANNEL);

/** Labels the running invocation with one more call or job; its CPU time is shared equally among its labels. */
export function labelWork(label: WorkLabel): void {
  work.publish(label);
}
