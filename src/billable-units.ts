// What Cloudflare bills a call or a job for, counted where it happens (docs/costs.md).
import { AsyncLocalStorage } from "node:async_hooks";

/** The billable units of one tool call or job, and the D1 waits the usage log also keeps. */
export interface BillableUnits {
  /** Round trips to D1 (a statement run alone, or one `batch()` of any size) and the summed wait on them. */
  d1RoundTrips: number;
  d1Ms: number;
  /** D1's own `meta.rows_read` and `meta.rows_written`, summed over the statements (index entries included). */
  d1RowsRead: number;
  d1RowsWritten: number;
  /** Rows only a local stand-in reads and writes (the D1 vector index in place of Vectorize): production bills none. */
  localRowsRead: number;
  localRowsWritten: number;
  kvReads: number;
  kvWrites: number;
  kvDeletes: number;
  kvLists: number;
  /** Messages sent to queues. */
  queueSends: number;
  /**
   * Billed queue operations: a message's write, read and delete, each one per 64 KB of it (a 100 KB message is six); a
   * retried delivery one more read, a dead letter its write, read and delete on the dead-letter queue.
   */
  queueOperations: number;
  /** Workers AI neurons, estimated from the model's published price and the tokens sent (model-prices.ts). */
  aiNeurons: number;
  /** R2 operations on documents' originals: Class A (writes, lists) and Class B (reads); deletes are free. */
  r2ClassA: number;
  r2ClassB: number;
  /**
   * Worker CPU milliseconds, the platform's own count for the invocation, shared among the calls and jobs it ran
   * (cpu-time.ts: the Worker tails itself). Known only after the invocation: recorded apart, never during a call.
   */
  cpuMs: number;
  /** The calls and jobs whose invocation's CPU time was recorded: cpuMs / cpuCalls is a mean per call. */
  cpuCalls: number;
}

export const UNIT_NAMES = [
  "d1RoundTrips",
  "d1Ms",
  "d1RowsRead",
  "d1RowsWritten",
  "localRowsRead",
  "localRowsWritten",
  "kvReads",
  "kvWrites",
  "kvDeletes",
  "kvLists",
  "queueSends",
  "queueOperations",
  "aiNeurons",
  "r2ClassA",
  "r2ClassB",
  "cpuMs",
  "cpuCalls",
] as const satisfies readonly (keyof BillableUnits)[];

export function noUnits(): BillableUnits {
  return {
    d1RoundTrips: 0,
    d1Ms: 0,
    d1RowsRead: 0,
    d1RowsWritten: 0,
    localRowsRead: 0,
    localRowsWritten: 0,
    kvReads: 0,
    kvWrites: 0,
    kvDeletes: 0,
    kvLists: 0,
    queueSends: 0,
    queueOperations: 0,
    aiNeurons: 0,
    r2ClassA: 0,
    r2ClassB: 0,
    cpuMs: 0,
    cpuCalls: 0,
  };
}

export function addUnits(into: BillableUnits, from: Partial<BillableUnits>): BillableUnits {
  for (const name of UNIT_NAMES) into[name] += from[name] ?? 0;
  return into;
}

const BILLED_UNITS = UNIT_NAMES.filter((name) => name !== "d1RoundTrips" && name !== "d1Ms" && name !== "cpuCalls");

/** Whether any unit Cloudflare bills is above 0 (round trips and waits are not billed). */
export function billsAnything(units: BillableUnits): boolean {
  return BILLED_UNITS.some((name) => units[name] > 0);
}

/** One of `n` calls' share, for calls that ran as one (a JSON-RPC batch of log_chat turns is one write). */
export function shareOf(units: BillableUnits, n: number): BillableUnits {
  const share = noUnits();
  for (const name of UNIT_NAMES) share[name] = units[name] / n;
  return share;
}

/**
 * Where the counting bindings add what they see. `current` is what a call or job is charged to: the units of the
 * `charging` run the operation belongs to, followed through awaits (async context), so work it leaves running after
 * the response is still charged to it; outside any run, the meter's own. `settled()` waits for that work before the
 * units are logged.
 */
export class UnitMeter {
  private readonly own: BillableUnits = noUnits();
  private readonly charged = new AsyncLocalStorage<BillableUnits>();
  private readonly running = new Set<Promise<unknown>>();

  get current(): BillableUnits {
    return this.charged.getStore() ?? this.own;
  }

  /** Runs `work`, and everything it starts, charged to `units`. */
  charging<T>(units: BillableUnits, work: () => Promise<T>): Promise<T> {
    return this.charged.run(units, work);
  }

  /** Keeps track of an operation until it ends, so `settled()` can wait for it. */
  track<T>(operation: Promise<T>): Promise<T> {
    this.running.add(operation);
    const done = () => this.running.delete(operation);
    operation.then(done, done);
    return operation;
  }

  /** Resolves once every operation started so far has ended (those they start too). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /**
   * What was spent outside any run (a request's key lookup, a queue batch's route read), handed to whoever accounts
   * for it; the meter's own units start again from nothing.
   */
  takeOwn(): BillableUnits {
    const taken = { ...this.own };
    Object.assign(this.own, noUnits());
    return taken;
  }
}
