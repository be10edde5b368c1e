import type { NewItem, WrittenItem } from "../core/memory/item-types";
import { writeItems } from "../core/memory/items";
import type { ToolContext } from "./define-tool";

/**
 * The handler and handleMany of a tool that writes one item per call: a JSON-RPC batch of its calls is
 * one atomic writeItems (one D1 batch), with the same answers, in order, as the calls one by one.
 */
export function itemWrites<Input, Output>(
  toItem: (input: Input) => NewItem,
  toResult: (input: Input, written: WrittenItem) => Output,
) {
  return {
    handler: async (input: Input, ctx: ToolContext): Promise<Output> =>
      toResult(input, (await writeItems(ctx.scope, ctx.services, [toItem(input)]))[0]!),
    handleMany: async (inputs: Input[], ctx: ToolContext): Promise<Output[]> => {
      const written = await writeItems(ctx.scope, ctx.services, inputs.map(toItem));
      return inputs.map((input, i) => toResult(input, written[i]!));
    },
  };
}
