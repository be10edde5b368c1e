import { z } from "zod";
import type { DerivedView } from "../core/memory/derived";
import { MEMORY_KINDS, SAID_BY, WHEN_PRECISIONS } from "../core/memory/item-types";
import { iso } from "./params";

/**
 * What a memory derived from conversation turns carries in search, memory_context_build, memory_get and memory_list
 * (absent on everything stored as given). `memory_kind`, not `kind`: `kind` already names the tool family that wrote
 * an item (memory, message, ...), and the `kinds` filters read it.
 */
export const derivedFields = {
  derived: z.boolean().optional().describe("true: extracted from conversation turns or document chunks (see sources)."),
  memory_kind: z.enum(MEMORY_KINDS).optional(),
  subject: z.string().optional().describe("Whom the memory is about."),
  valid_from: z.string().nullable().optional().describe("When it became true (an event: when it happened)."),
  valid_to: z.string().nullable().optional().describe("When a later memory of its key replaced it; null: it holds."),
  sources: z.array(z.string()).optional().describe("Item ids of the turns (or document chunks) it was derived from."),
  said_by: z
    .enum(SAID_BY)
    .optional()
    .describe(
      "Present when no user or system turn said it: the assistant, a tool or a document did (never a user's wish).",
    ),
  when_precision: z
    .enum(WHEN_PRECISIONS)
    .optional()
    .describe("How much of its time was given: day, month or year (valid_from is that period's start)."),
};

export function derivedFieldsOf(derived: DerivedView | null) {
  if (derived === null) return {};
  return {
    derived: true,
    memory_kind: derived.kind,
    subject: derived.subject,
    valid_from: derived.validFrom === null ? null : iso(derived.validFrom),
    valid_to: derived.validTo === null ? null : iso(derived.validTo),
    sources: derived.sources,
    ...(derived.saidBy ? { said_by: derived.saidBy } : {}),
    ...(derived.whenPrecision ? { when_precision: derived.whenPrecision } : {}),
  };
}
