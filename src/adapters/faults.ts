/**
 * Fault injection as configuration (FAULTS), for tests and `npm run dev`: the adapters' calls fail or slow down
 * on a schedule, so what a user sees when a dependency fails can be tried and tested. Never on unless set.
 *
 *   FAULTS=embedder:down,kv:slow=200,vectors:error=0.3,queue:down-for=5
 *
 * Targets: embedder (Workers AI / the local embedder), vectors (Vectorize / the local index), kv (the cache),
 * queue (the job queue), d1 (every tenant shard's database, failing as D1 does when overloaded). Modes: down (every call fails), down-for=N (the next N calls of this isolate fail,
 * then it recovers), error=P (each call fails with probability P), slow=MS (each call waits MS first).
 */
export const FAULT_TARGETS = ["embedder", "vectors", "kv", "queue", "d1"] as const;
export type FaultTarget = (typeof FAULT_TARGETS)[number];

type Fault =
  | { mode: "down" }
  | { mode: "down-for"; calls: number }
  | { mode: "error"; rate: number }
  | { mode: "slow"; ms: number };

/** FAULTS parsed; a malformed entry is a configuration error naming it. */
export function parseFaults(spec: string | undefined): Map<FaultTarget, Fault> {
  const faults = new Map<FaultTarget, Fault>();
  for (const entry of (spec ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [target, mode = "", value] = entry.split(/[:=]/);
    const n = Number(value);
    const fault: Fault | null =
      mode === "down" && value === undefined
        ? { mode: "down" }
        : mode === "down-for" && Number.isInteger(n) && n > 0
          ? { mode: "down-for", calls: n }
          : mode === "error" && n >= 0 && n <= 1
            ? { mode: "error", rate: n }
            : mode === "slow" && Number.isFinite(n) && n >= 0
              ? { mode: "slow", ms: n }
              : null;
    if (!(FAULT_TARGETS as readonly string[]).includes(target!) || !fault) {
      throw new Error(
        `Configuration error: FAULTS entry '${entry}' must be <${FAULT_TARGETS.join("|")}>:<down|down-for=N|error=P|slow=MS>`,
      );
    }
    faults.set(target as FaultTarget, fault);
  }
  return faults;
}

/** Calls failed so far per down-for entry, per isolate: the schedule runs across requests. */
const failedSoFar = new Map<string, number>();

/** What a failing target throws: D1's own overloaded error for d1 (so the real classification runs), else a plain one. */
const failure = (target: FaultTarget) =>
  target === "d1"
    ? new Error("D1_ERROR: D1 DB is overloaded. Too many requests queued. (injected fault: FAULTS)")
    : new Error(`${target} unavailable (injected fault: FAULTS)`);

/** Runs before each call of a faulty target: waits, fails, or lets it through, on the fault's schedule. */
function gate(target: FaultTarget, fault: Fault): () => Promise<void> {
  const unavailable = () => failure(target);
  return async (): Promise<void> => {
    if (fault.mode === "slow") await new Promise((r) => setTimeout(r, fault.ms));
    else if (fault.mode === "down") throw unavailable();
    else if (fault.mode === "error" && Math.random() < fault.rate) throw unavailable();
    else if (fault.mode === "down-for") {
      const key = `${target}:${fault.calls}`;
      const failed = failedSoFar.get(key) ?? 0;
      if (failed < fault.calls) {
        failedSoFar.set(key, failed + 1);
        throw unavailable();
      }
    }
  };
}

/** `adapter` with the fault of `target` applied to every method call (itself when there is none). */
export function withFault<T extends object>(adapter: T, target: FaultTarget, faults: Map<FaultTarget, Fault>): T {
  const fault = faults.get(target);
  if (!fault) return adapter;
  const before = gate(target, fault);
  return new Proxy(adapter, {
    get(object, property) {
      const value = Reflect.get(object, property);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await before();
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}

/**
 * A D1 binding with the d1 fault applied to every query it runs (statements' first/all/run/raw, batch, exec, and
 * the same through a session); itself when there is none. A batch fails before it runs, as D1 refuses an
 * overloaded request: nothing of it is written.
 */
export function withD1Fault(d1: D1Database, faults: Map<FaultTarget, Fault>): D1Database {
  const fault = faults.get("d1");
  if (!fault) return d1;
  const before = gate("d1", fault);
  const inner = new WeakMap<object, D1PreparedStatement>();
  const statement = (real: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = {
      bind: (...values: unknown[]) => statement(real.bind(...values)),
      first: (column?: string) => before().then(() => (column === undefined ? real.first() : real.first(column))),
      all: () => before().then(() => real.all()),
      run: () => before().then(() => real.run()),
      raw: (options?: { columnNames?: boolean }) => before().then(() => real.raw(options as { columnNames?: false })),
    } as unknown as D1PreparedStatement;
    inner.set(wrapped, real);
    return wrapped;
  };
  const unwrap = (statements: D1PreparedStatement[]) => statements.map((s) => inner.get(s) ?? s);
  return {
    prepare: (sql: string) => statement(d1.prepare(sql)),
    batch: (statements: D1PreparedStatement[]) => before().then(() => d1.batch(unwrap(statements))),
    exec: (sql: string) => before().then(() => d1.exec(sql)),
    dump: () => d1.dump(),
    withSession: (constraint?: string) => {
      const session = d1.withSession(constraint as D1SessionConstraint);
      return {
        prepare: (sql: string) => statement(session.prepare(sql)),
        batch: (statements: D1PreparedStatement[]) => before().then(() => session.batch(unwrap(statements))),
        getBookmark: () => session.getBookmark(),
      };
    },
  } as unknown as D1Database;
}
