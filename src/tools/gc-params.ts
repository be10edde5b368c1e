import { z } from "zod";
import type { ContextDescriptors } from "../core/context/context-usage";
import { ITEM_TYPES, type ItemType, MAX_ITEM_CHARS } from "../core/memory/item-types";
import type { SegmentFilter } from "../core/working-set/segment-filters";
import { invalidParameter } from "../errors";
import { strictInput, validationError } from "../validation";
import { iso, itemTypeParam, parseTimestamp, tagsParam, timestampParam } from "./params";

// Seed 004's `filters` and `context_descriptors` arrive as objects or as their JSON strings. tools/list
// advertises the typed object (so a model can fill it in), and both forms are checked against it.

/** Segment ids of one call: at most 1,000. */
export const segmentIdsParam = z.array(z.string().min(1).max(200)).min(1).max(1000);

export const taskIdParam = z.string().min(1).max(200);

const filtersSchema = strictInput(
  z.object({
    file_path: z.string().min(1).max(1000).nullish(),
    task_id: taskIdParam.nullish(),
    tags: z
      .union([
        z
          .string()
          .min(1)
          .max(100)
          .transform((t) => [t]),
        tagsParam,
      ])
      .nullish()
      .describe("A tag or a list of tags (any of)."),
    type: itemTypeParam.nullish(),
    created_after: timestampParam.nullish(),
    created_before: timestampParam.nullish(),
  }),
);

export const filtersParam = z
  .union([z.string().max(20_000), filtersSchema])
  .optional()
  .describe(
    'Metadata filters, an object or its JSON string: {"file_path", "task_id", "tags": [any of], "type", "created_after", "created_before"} (dates ISO 8601 or epoch ms).',
  );

// Descriptors are the platform's own payload: extra keys are allowed (and ignored) at every level, and
// tools/list says so with typed `additionalProperties` instead of `false`.
const text = z.string().max(MAX_ITEM_CHARS);
const entryObject = z
  .looseObject({
    content: text.nullish(),
    text: text.nullish(),
    summary: text.nullish(),
    role: z.string().max(50).nullish(),
    timestamp: timestampParam.nullish(),
    type: z.string().max(50).nullish(),
    file_path: z.string().max(1000).nullish(),
  })
  .refine((e) => typeof (e.content ?? e.text ?? e.summary) === "string", {
    message: "needs its text in 'content' (or 'text' / 'summary')",
  });
/** A message or summary: its text, or an object with the text in content / text / summary. */
const textEntry = z.union([text, entryObject]).transform((v) => (typeof v === "string" ? { content: v } : v));
const idValue = z.union([z.string().max(200), z.number()]);

const descriptorsSchema = z.looseObject({
  recent_messages: z.array(textEntry).max(200).nullish(),
  current_file: z
    .looseObject({
      path: z.string().min(1).max(1000),
      line: z.number().int().min(0).nullish(),
      line_start: z.number().int().min(0).nullish(),
      line_end: z.number().int().min(0).nullish(),
      content: text.nullish(),
      text: text.nullish(),
    })
    .nullish(),
  token_usage: z
    .looseObject({
      current: z.number().min(0).nullish(),
      limit: z.number().int().min(1).nullish(),
      usage_percent: z.number().nullish(),
    })
    .nullish(),
  segment_summaries: z.array(textEntry).max(200).nullish(),
  task_info: z.looseObject({ task_id: idValue.nullish(), id: idValue.nullish() }).nullish(),
});

export const descriptorsParam = z
  .union([z.string().max(2_000_000), descriptorsSchema])
  .optional()
  .describe(
    "What the platform has in context, an object or its JSON string: recent_messages, current_file {path, line, content}, token_usage {current, limit}, segment_summaries, task_info {task_id}.",
  );

type ObjectArg = string | Record<string, unknown> | undefined;

/** An object parameter that may arrive as a JSON string (seed 004 accepts both). */
function parseObjectParam(value: ObjectArg, parameter: string): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") return value;
  if (value.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw invalidParameter(parameter, `Invalid parameter '${parameter}': not valid JSON (${(error as Error).message})`);
  }
  if (parsed === null) return undefined;
  if (typeof parsed !== "object" || Array.isArray(parsed))
    throw invalidParameter(
      parameter,
      `Invalid parameter '${parameter}': expected a JSON object, got ${Array.isArray(parsed) ? "an array" : typeof parsed}`,
    );
  return parsed as Record<string, unknown>;
}

/** Validates against `schema` with errors that name the full path (e.g. filters.created_after). */
function validateNested<S extends z.ZodType>(schema: S, value: unknown, parameter: string): z.output<S> {
  const parsed = z.object({ [parameter]: schema }).safeParse({ [parameter]: value }, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error);
  return (parsed.data as Record<string, z.output<S>>)[parameter]!;
}

export interface ParsedFilters {
  filter: SegmentFilter;
  /** The filters as applied, in the caller's vocabulary. */
  applied: Record<string, unknown>;
}

export function parseFilters(value: ObjectArg): ParsedFilters {
  const raw = parseObjectParam(value, "filters");
  if (raw === undefined) return { filter: {}, applied: {} };
  const f = validateNested(filtersSchema, raw, "filters");
  const filter: SegmentFilter = {};
  const applied: Record<string, unknown> = {};
  if (f.file_path != null) applied.file_path = filter.filePath = f.file_path;
  if (f.task_id != null) applied.task_id = filter.taskId = f.task_id;
  if (f.tags != null && f.tags.length > 0) applied.tags = filter.tags = f.tags;
  if (f.type != null) {
    applied.type = f.type;
    filter.types = [f.type];
  }
  if (f.created_after != null) {
    filter.createdAfter = parseTimestamp(f.created_after, "filters.created_after");
    applied.created_after = iso(filter.createdAfter!);
  }
  if (f.created_before != null) {
    filter.createdBefore = parseTimestamp(f.created_before, "filters.created_before");
    applied.created_before = iso(filter.createdBefore!);
  }
  return { filter, applied };
}

export function parseDescriptors(value: ObjectArg): ContextDescriptors | null {
  const raw = parseObjectParam(value, "context_descriptors");
  if (raw === undefined) return null;
  const d = validateNested(descriptorsSchema, raw, "context_descriptors");
  const body = (e: { content?: string | null; text?: string | null; summary?: string | null }) =>
    e.content ?? e.text ?? e.summary ?? "";
  const messages = (d.recent_messages ?? []).flatMap((m, i) => {
    const content = body(m);
    if (content.trim() === "") return [];
    const createdAt =
      "timestamp" in m && m.timestamp != null
        ? parseTimestamp(m.timestamp, `context_descriptors.recent_messages.${i}.timestamp`)
        : undefined;
    return [
      { content, role: ("role" in m ? m.role : null) ?? null, ...(createdAt !== undefined ? { createdAt } : {}) },
    ];
  });
  const summaries = (d.segment_summaries ?? []).flatMap((s) => {
    const content = body(s);
    if (content.trim() === "") return [];
    const declared = "type" in s ? s.type : null;
    const type: ItemType =
      declared != null && (ITEM_TYPES as readonly string[]).includes(declared) ? (declared as ItemType) : "note";
    return [{ content, type, filePath: ("file_path" in s ? s.file_path : null) ?? null }];
  });
  const file = d.current_file;
  const fileText = file ? (file.content ?? file.text ?? null) : null;
  const lineStart = file ? (file.line_start ?? file.line ?? null) : null;
  const taskId = d.task_info?.task_id ?? d.task_info?.id ?? null;
  return {
    recentMessages: messages,
    currentFile: file
      ? {
          path: file.path,
          lineStart,
          lineEnd: file.line_end ?? lineStart,
          content: fileText !== null && fileText.trim() !== "" ? fileText : null,
        }
      : null,
    segmentSummaries: summaries,
    taskId: taskId === null ? null : String(taskId),
    tokenUsage: d.token_usage ? { current: d.token_usage.current ?? null, limit: d.token_usage.limit ?? null } : null,
  };
}
