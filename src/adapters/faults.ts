/**
 * Fault injection as configuration (FAULTS), for tests and `npm run dev`: the adapters' calls fail or slow down
 * on a schedule, so what a user sees when a dependency fails can be tried and tested. Never on unless set.
 *
 *   FAULTS=embedder:down,kv:slow=200,vectors:error=0.3,queue:down-for=5
 *
 * Targets: embedder (Workers AI / the local embedder), vectors (Vectorize / the local index), kv (the cache),
 * queue (the job queue). Modes: down (every call fails), down-for=N (the next N calls of this isolate fail,
 * then it recovers), error=P (each call fails with probability P), slow=MS (each call waits MS first).
 */
export const FAULT_TARGETS = ["embedder", "vectors", "kv", "queue"] as const;
export type FaultTarget = (typeof FAULT_TARGETS)[number];

type Fault = { mode: "down" } | { mode: "down-for"; calls: number } | { mode: "error"; rate: number } | { mode: "slow"; ms: number };

/** FAULTS parsed; a malformed entry is a configuration error naming it. */
export function parseFaults(spec: string | undefined): Map<FaultTarget, Fault> {
  const faults = new Map<FaultTarget, Fault>();
  for (const entry of (spec ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const [target, mode = "", value] = entry.split(/[:=]/);
    const n = Number(value);
    const fault: Fault | null =
      mode === "down" && value === undefined ? { mode: "down" }
      : mode === "down-for" && Number.isInteger(n) && n > 0 ? { mode: "down-for", calls: n }
      : mode === "error" && n >= 0 && n <= 1 ? { mode: "error", rate: n }
      : mode === "slow" && Number.isFinite(n) && n >= 0 ? { mode: "slow", ms: n }
      : null;
    if (!(FAULT_TARGETS as readonly string[]).includes(target!) || !fault) {
      throw new Error(`Configuration error: FAULTS entry '${entry}' must be <${FAULT_TARGETS.join("|")}>:<down|down-for=N|error=P|slow=MS>`);
    }
    faults.set(target as FaultTarget, fault);
  }
  return faults;
}

/** Calls failed so far per down-for entry, per isolate: the schedule runs across requests. */
const failedSoFar = new Map<string, number>();

/** `adapter` with the fault of `target` applied to every method call (itself when there is none). */
export function withFault<T extends object>(adapter: T, target: FaultTarget, faults: Map<FaultTarget, Fault>): T {
  const fault = faults.get(target);
  if (!fault) return adapter;
  const unavailable = () => new Error(`${target} unavailable (injected fault: FAULTS)`);
  const before = async (): Promise<void> => {
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
