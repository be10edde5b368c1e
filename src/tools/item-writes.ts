import { type KeyedCall, writeItemsOncePerKey } from "../core/memory/idempotency";
import type { NewItem, WrittenItem } from "../core/memory/item-types";
import { writeItems } from "../core/memory/items";
import type { ToolContext } from "./define-tool";

/**
 * The handler and handleMany of a tool that writes one item per call: a JSON-RPC batch of its calls is
 * one atomic writeItems (one D1 batch), with the same answers, in order, as the calls one by one. With
 * `keyOf` (a tool that takes idempotency_key), a call whose key was stored answers its first result instead.
 */
export function itemWrites<Input, Output>(
  toItem: (input: Input) => NewItem,
  toResult: (input: Input, written: WrittenItem) => Output,
  keyOf?: (input: Input) => KeyedCall | undefined,
) {
  const write = (inputs: Input[], ctx: ToolContext): Promise<WrittenItem[]> =>
    keyOf
      ? writeItemsOncePerKey(ctx.scope, ctx.services, inputs.map(toItem), inputs.map(keyOf))
      : writeItems(ctx.scope, ctx.services, inputs.map(toItem));
  return {
    handler: async (input: Input, ctx: ToolContext): Promise<Output> =>
      toResult(input, (await write([input], ctx))[0]!),
    handleMany: async (inputs: Input[], ctx: ToolContext): Promise<Output[]> => {
      const written = await write(inputs, ctx);
      return inputs.map((input, i) => toResult(input, written[i]!));
    },
  };
}
