import { type UsageBindings, type UsageBuffer, usageBuffer } from "../control/usage-buffer";
import { jobEntry, toolEntry } from "../core/tenants/usage-hours";
import type { JobRunRecord, ToolCallRecord } from "../messages";
import type { UsageLog } from "../ports";

/**
 * The usage log through the isolate's buffer (control/usage-buffer.ts): a request's calls are summed into its hour's
 * rows with the next write, which the request's waitUntil() keeps alive; no queue message and no row a call.
 */
export class BufferedUsageLog implements UsageLog {
  constructor(
    private readonly env: UsageBindings,
    private readonly waitUntil: (promise: Promise<unknown>) => void,
    private readonly buffer: UsageBuffer = usageBuffer,
  ) {}

  async record(tenantId: string, calls: ToolCallRecord[], jobs: JobRunRecord[] = []): Promise<void> {
    const entries = [
      ...calls.flatMap((call) => toolEntry(tenantId, call) ?? []),
      ...jobs.map((j) => jobEntry(tenantId, j)),
    ];
    const write = this.buffer.add(
      this.env,
      entries,
      calls.map((call) => ({ tenantId, call })),
    );
    if (write) this.waitUntil(write.catch((error) => console.error("usage log write failed", error)));
  }
}
