import { PLATFORM_LIMITS, utf8Bytes } from "../platform-limits";

const Q = PLATFORM_LIMITS.queues;

/**
 * A queue producer that refuses what Queues refuses: a message over 128 KB, a sendBatch of more than 100
 * messages or over 256 KB in all (sizes as the JSON the body travels as, in UTF-8 bytes). Local queues
 * accept these. Applied at the Worker's entry (src/checked-env.ts).
 */
export function checkedQueue<Body>(inner: Queue<Body>): Queue<Body> {
  return {
    // async: a refusal is a rejected promise, as the platform's is.
    send: async (body: Body, options?: QueueSendOptions) => {
      checkMessage(body);
      return inner.send(body, options);
    },
    sendBatch: async (messages: Iterable<MessageSendRequest<Body>>, options?: QueueSendBatchOptions) => {
      const list = [...messages];
      if (list.length > Q.batchMessages)
        throw new Error(`Queue sendBatch failed: ${list.length} messages; a batch holds at most ${Q.batchMessages}`);
      const total = list.reduce((sum, m) => sum + checkMessage(m.body), 0);
      if (total > Q.batchBytes)
        throw new Error(`Queue sendBatch failed: the batch is ${total} bytes; at most ${Q.batchBytes} in all`);
      return inner.sendBatch(list, options);
    },
    metrics: () => (inner as unknown as { metrics: () => Promise<unknown> }).metrics(),
  } as unknown as Queue<Body>;
}

/** A message's size as Queues counts it (its JSON in UTF-8); throws past the limit. */
export function messageBytes(body: unknown): number {
  return utf8Bytes(JSON.stringify(body) ?? "");
}

function checkMessage(body: unknown): number {
  const bytes = messageBytes(body);
  if (bytes > Q.messageBytes)
    throw new Error(`Queue send failed: message is ${bytes} bytes; the limit is ${Q.messageBytes}`);
  return bytes;
}
