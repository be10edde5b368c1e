import type { BillableUnits, UnitMeter } from "../billable-units";
import { QUEUE_OPERATIONS_PER_MESSAGE } from "../price-list";
import { messageBytes } from "./checked-queue";
import { neuronsFor } from "./model-prices";
import { toMarkdownNeurons } from "./to-markdown-neurons";
import { estimateTokens, reportedTokens } from "./workers-ai-json-model";

type Counted = (args: unknown[]) => Partial<BillableUnits>;

const METERED = Symbol("metered binding");
type Metering = { raw: object; meter: UnitMeter };

/**
 * A binding whose named methods charge the meter's current call or job as they start (a bulk KV read counts each
 * key, as KV bills it) and whose calls the meter tracks until they end. Other members pass through. Metering a
 * binding that is metered already charges the new meter instead, never both.
 */
function metered<T extends object>(binding: T, meter: UnitMeter, counted: Record<string, Counted>): T {
  // An absent binding (a local run without it) stays absent, and fails where it is used.
  if (!binding) return binding;
  const metering = (binding as { [METERED]?: Metering })[METERED];
  if (metering?.meter === meter) return binding;
  const raw = (metering?.raw ?? binding) as T;
  return new Proxy(raw, {
    get(target, property) {
      if (property === METERED) return { raw, meter } satisfies Metering;
      const value = Reflect.get(target, property, target);
      const count = typeof property === "string" && Object.hasOwn(counted, property) ? counted[property] : undefined;
      if (typeof value !== "function") return value;
      // A native binding's method refuses a `this` other than itself (R2's delete, say): the others pass through bound.
      if (count === undefined) return value.bind(target);
      return (...args: unknown[]) => {
        const units = meter.current;
        for (const [unit, n] of Object.entries(count(args))) units[unit as keyof BillableUnits] += n;
        return meter.track(Promise.resolve(value.apply(target, args)));
      };
    },
  });
}

const keysOf = (args: unknown[]) => (Array.isArray(args[0]) ? args[0].length : 1);

export function meteredKv(kv: KVNamespace, meter: UnitMeter): KVNamespace {
  return metered(kv, meter, {
    get: (args) => ({ kvReads: keysOf(args) }),
    getWithMetadata: (args) => ({ kvReads: keysOf(args) }),
    put: () => ({ kvWrites: 1 }),
    delete: () => ({ kvDeletes: 1 }),
    list: () => ({ kvLists: 1 }),
  });
}

/** R2 bills writes and lists as Class A, reads as Class B, and deletes nothing (docs/costs.md). */
export function meteredR2(bucket: R2Bucket, meter: UnitMeter): R2Bucket {
  return metered(bucket, meter, {
    put: () => ({ r2ClassA: 1 }),
    list: () => ({ r2ClassA: 1 }),
    createMultipartUpload: () => ({ r2ClassA: 1 }),
    get: () => ({ r2ClassB: 1 }),
    head: () => ({ r2ClassB: 1 }),
  });
}

/** Queues bill each operation on a message per 64 KB of it (docs/costs.md). */
const QUEUE_OPERATION_BYTES = 64 * 1024;

/** 64 KB units of a message as Queues counts it (its JSON in UTF-8): each of its operations is billed this many times. */
export function queueUnitsOf(body: unknown): number {
  return Math.max(1, Math.ceil(messageBytes(body) / QUEUE_OPERATION_BYTES));
}

/** A message's write, read and delete: what sending it costs once it is consumed and acknowledged. */
export function sentMessageOperations(body: unknown): number {
  return QUEUE_OPERATIONS_PER_MESSAGE * queueUnitsOf(body);
}

/** A retried delivery reads its message again: one operation per 64 KB of it (charged as the delivery arrives). */
export function redeliveryOperations(message: Message<unknown>): number {
  return message.attempts > 1 ? queueUnitsOf(message.body) : 0;
}

export function meteredQueue<Body>(queue: Queue<Body>, meter: UnitMeter): Queue<Body> {
  return metered(queue, meter, {
    send: (args) => ({ queueSends: 1, queueOperations: sentMessageOperations(args[0]) }),
    sendBatch: (args) => {
      const messages = Array.isArray(args[0]) ? (args[0] as MessageSendRequest<Body>[]) : [];
      const operations = messages.reduce((sum, message) => sum + sentMessageOperations(message.body), 0);
      return { queueSends: messages.length, queueOperations: operations };
    },
  });
}

/**
 * Workers AI, each call charged its neurons when it answers: from the tokens the answer reports, else estimated
 * from the text sent and received (~4 characters a token), at the model's published price (model-prices.ts). A
 * toMarkdown conversion is charged what its images' descriptions are estimated to cost (to-markdown-neurons.ts).
 */
export function meteredAi(ai: Ai, meter: UnitMeter): Ai {
  if (!ai) return ai;
  const metering = (ai as { [METERED]?: Metering })[METERED];
  if (metering?.meter === meter) return ai;
  const raw = (metering?.raw ?? ai) as Ai;
  return new Proxy(raw, {
    get(target, property) {
      if (property === METERED) return { raw, meter } satisfies Metering;
      const value = Reflect.get(target, property, target);
      if (property === "toMarkdown" && typeof value === "function") return meteredToMarkdown(target, value, meter);
      if (property !== "run" || typeof value !== "function") return value;
      return (model: string, inputs: unknown, ...rest: unknown[]) => {
        const units = meter.current;
        return meter.track(
          Promise.resolve(value.call(target, model, inputs, ...rest)).then((result: unknown) => {
            units.aiNeurons += callNeurons(model, inputs, result);
            return result;
          }),
        );
      };
    },
  });
}

/** toMarkdown with files charges its answer's neurons; without (the handle for `supported()`), it passes through. */
function meteredToMarkdown(target: Ai, toMarkdown: (...args: unknown[]) => unknown, meter: UnitMeter) {
  return (...args: unknown[]) => {
    if (args.length === 0) return toMarkdown.apply(target, args);
    const units = meter.current;
    return meter.track(
      Promise.resolve(toMarkdown.apply(target, args)).then((result: unknown) => {
        units.aiNeurons += toMarkdownNeurons(result);
        return result;
      }),
    );
  };
}

export function callNeurons(model: string, inputs: unknown, result: unknown): number {
  const usage = (typeof result === "object" && result !== null && "usage" in result ? result.usage : null) as Record<
    string,
    unknown
  > | null;
  const tokensIn = reportedTokens(usage?.prompt_tokens ?? usage?.input_tokens) ?? estimateTokens(textLength(inputs));
  const answer = typeof result === "object" && result !== null && "response" in result ? result.response : null;
  const tokensOut =
    reportedTokens(usage?.completion_tokens ?? usage?.output_tokens) ??
    (typeof answer === "string" ? estimateTokens(answer.length) : 0);
  return neuronsFor(model, tokensIn, tokensOut);
}

/** Characters of text in a request's inputs (texts, messages, a query and its contexts), not its JSON syntax. */
function textLength(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value)) return value.reduce((sum: number, v) => sum + textLength(v), 0);
  if (typeof value === "object" && value !== null)
    return Object.entries(value).reduce((sum, [key, v]) => sum + (key === "response_format" ? 0 : textLength(v)), 0);
  return 0;
}
