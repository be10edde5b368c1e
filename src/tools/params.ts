import { z } from "zod";
import { type KeyedCall, MAX_IDEMPOTENCY_KEY_CHARS } from "../core/memory/idempotency";
import { ITEM_TYPES, MAX_ITEM_CHARS } from "../core/memory/item-types";
import { invalidParameter } from "../errors";
import type { ToolContext } from "./define-tool";

/** Shared parameter shapes, so every tool states the same limits in the same words. */
/** A search query: any text but blank. */
export const queryParam = z
  .string()
  .max(2000)
  .refine((q) => q.trim().length > 0, "must not be empty");
export const contentParam = z.string().min(1).max(MAX_ITEM_CHARS);
export const projectName = z.string().min(1).max(200);
export const tagsParam = z.array(z.string().min(1).max(100)).max(50);
export const metadataParam = z.record(z.string(), z.unknown());
export const itemTypeParam = z.enum(ITEM_TYPES);
export const conversationIdParam = z.string().min(1).max(200);
/** A keyed fact's name, e.g. user.city: one current memory per key and namespace. */
export const factKeyParam = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .describe("Optional fact key (e.g. user.city): storing the key again supersedes this memory; history is kept.");

/** A client's key for a write it may send again (idempotency.ts). */
export const idempotencyKeyParam = z
  .string()
  .min(1)
  .max(MAX_IDEMPOTENCY_KEY_CHARS)
  .optional()
  .describe(
    "Makes a retry safe: a key of yours (e.g. a UUID) for this call. Sent again within 24 hours, the same key answers " +
      "the first call's result and stores nothing; with another tool or other arguments it is refused (CONFLICT).",
  );

/** A call's key with what it asks (its other arguments), for idempotency.ts; undefined without a key. */
export function keyedCall(
  tool: string,
  input: { idempotency_key?: string | undefined },
  project: string,
): KeyedCall | undefined {
  const { idempotency_key: key, ...args } = input;
  return key === undefined ? undefined : { key, tool, args, project };
}

/** The instants a JavaScript Date can hold: ±8.64e15 ms around 1970 (ECMA-262 time values). */
export const MAX_EPOCH_MS = 8.64e15;
const TIMESTAMP_ACCEPTS = `an ISO 8601 date (e.g. "2024-05-01T12:00:00Z") or epoch milliseconds from -${MAX_EPOCH_MS} to ${MAX_EPOCH_MS}`;

/**
 * An ISO 8601 date or epoch milliseconds. Checked at the boundary, before anything is written: a time
 * outside the Date range would be stored and then break every read that formats it.
 */
export const timestampParam = z
  .union([z.string().max(100), z.number()], { error: `expected ${TIMESTAMP_ACCEPTS}` })
  .superRefine((value, ctx) => {
    if (toEpochMs(value) === undefined)
      ctx.addIssue({
        code: "custom",
        message: `expected ${TIMESTAMP_ACCEPTS} (got ${JSON.stringify(value).slice(0, 40)})`,
        input: value,
      });
  });

function toEpochMs(value: string | number): number | undefined {
  const ms = typeof value === "number" ? value : Date.parse(value);
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_EPOCH_MS ? ms : undefined;
}

export function parseTimestamp(value: string | number | undefined, parameter: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = toEpochMs(value);
  if (ms === undefined)
    throw invalidParameter(
      parameter,
      `Invalid parameter '${parameter}': expected ${TIMESTAMP_ACCEPTS} (got ${JSON.stringify(value).slice(0, 40)})`,
    );
  return ms;
}

/** The projects a query may read: the one asked for, else every project the key may touch (undefined = all). */
export function readableProjects(ctx: ToolContext, requested: string | undefined): string[] | undefined {
  if (requested !== undefined) return [requested];
  return ctx.caller.projects ?? undefined;
}

/** A stored time as ISO 8601; clamped into the Date range, so no stored value can make a read throw. */
export function iso(ms: number): string {
  const clamped = Number.isFinite(ms) ? Math.max(-MAX_EPOCH_MS, Math.min(MAX_EPOCH_MS, ms)) : 0;
  return new Date(clamped).toISOString();
}
