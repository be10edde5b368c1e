/**
 * A queue takes 5,000 messages a second, so a deployment can bind several of one kind (JOBS and JOBS_<name>, USAGE
 * and USAGE_<name>: wrangler.toml); adding one is a producer and a consumer block, no code change. Each send goes to
 * one drawn at random, so the load spreads evenly, and a queue that refuses (over its throughput, or down) passes
 * the send to the next.
 */

/** Whether a binding's name makes it one of the `kind` queues (kind, or kind_<name>). */
export function isQueueOfKind(kind: string, name: string): boolean {
  return name === kind || name.startsWith(`${kind}_`);
}

/** The deployment's queues of a kind, by binding name. */
export function queuesOfKind<Body>(env: object, kind: string): Queue<Body>[] {
  return Object.entries(env)
    .filter(
      ([name, value]) => isQueueOfKind(kind, name) && typeof (value as Queue<Body> | null)?.sendBatch === "function",
    )
    .sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))
    .map(([, queue]) => queue as Queue<Body>);
}

/**
 * Runs `send` against one queue drawn at random, then against the next while they refuse; the last refusal is thrown.
 * `send` must be taken whole or not at all (one send or sendBatch), or a retry elsewhere could deliver part of it twice.
 */
export async function sendToOne<Body>(
  queues: Queue<Body>[],
  kind: string,
  random: () => number,
  send: (queue: Queue<Body>) => Promise<unknown>,
): Promise<void> {
  if (queues.length === 0) throw new Error(`No ${kind} queue: bind a queue producer named ${kind} (wrangler.toml)`);
  const first = Math.floor(random() * queues.length);
  for (let tried = 0; ; tried++) {
    try {
      await send(queues[(first + tried) % queues.length]!);
      return;
    } catch (error) {
      if (tried + 1 >= queues.length) throw error;
      console.error(`a ${kind} queue refused a send; passing it to the next`, error);
    }
  }
}
