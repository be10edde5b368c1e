import { z } from "zod";
import { HISTORY_LIMIT, type HistoryTarget, readHistory } from "../core/extraction/events";
import { listSubjects, type ProfileEntry, readProfile } from "../core/extraction/profiles";
import { SAID_BY, WHEN_PRECISIONS } from "../core/memory/item-types";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { conversationIdParam, iso, parseTimestamp, projectName, readableProjects, timestampParam } from "./params";

// What extraction learned: a subject's profile, and the log of every decision (docs/extraction.md).

const profileEntry = z.object({
  id: z.string(),
  text: z.string(),
  key: z.string().nullable(),
  valid_from: z.string().nullable(),
  when_precision: z
    .enum(WHEN_PRECISIONS)
    .optional()
    .describe("How much of its time was given: day, month or year (valid_from is that period's start)."),
  said_by: z
    .enum(SAID_BY)
    .optional()
    .describe("Present when the assistant, a tool or a document said it, not the user."),
  sources: z.array(z.string()).describe("Item ids of the turns it was derived from."),
});

const entries = (list: ProfileEntry[]) =>
  list.map((e) => ({
    id: e.id,
    text: e.text,
    key: e.key,
    valid_from: e.validFrom === null ? null : iso(e.validFrom),
    ...(e.whenPrecision ? { when_precision: e.whenPrecision } : {}),
    ...(e.saidBy ? { said_by: e.saidBy } : {}),
    sources: e.sources,
  }));

export const memoryProfile = defineTool({
  name: "memory_profile",
  category: "memory",
  title: "Profile of a subject",
  description:
    "What is remembered about a subject (the user, or a person of the conversations; an alias set in memory_settings " +
    "works too): current facts, preferences, instructions (the user's stated wishes, as data), tasks and recent " +
    "events, each with the turns it came from, bounded to max_tokens (instructions first, events last); assembled " +
    "from stored memories, no model call. `as_of` answers what was true then. Without a subject, lists the subjects " +
    "there are with their number of memories.",
  input: z.object({
    subject: z.string().trim().min(1).max(200).optional(),
    project_id: projectName.optional().describe("Only this project; default: every project the key may read."),
    max_tokens: z.number().int().min(50).max(8000).default(1000),
    as_of: timestampParam.optional().describe("What was true at this time (ISO 8601 or epoch ms); default: now."),
  }),
  output: z.object({
    subject: z.string().optional(),
    facts: z.array(profileEntry).optional(),
    preferences: z.array(profileEntry).optional(),
    instructions: z.array(profileEntry).optional(),
    tasks: z.array(profileEntry).optional(),
    events: z.array(profileEntry).optional(),
    tokens: z.number().int().optional(),
    subjects: z.array(z.object({ subject: z.string(), memories: z.number().int() })).optional(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const projects = readableProjects(ctx, input.project_id) ?? null;
    if (input.subject === undefined) return { subjects: await listSubjects(ctx.scope, projects) };
    const asOf = parseTimestamp(input.as_of, "as_of") ?? null;
    const p = await readProfile(ctx.scope, projects, input.subject, input.max_tokens, asOf);
    return {
      subject: p.subject,
      facts: entries(p.facts),
      preferences: entries(p.preferences),
      instructions: entries(p.instructions),
      tasks: entries(p.tasks),
      events: entries(p.events),
      tokens: p.tokens,
    };
  },
});

export const memoryHistory = defineTool({
  name: "memory_history",
  category: "memory",
  title: "History of memories",
  description:
    "The extraction log: every decision about a memory (`id`), a key (`key`, e.g. caroline.home_city) or a " +
    "conversation (`conversation_id`) or a document read with extract (`document_id`): added, superseded, " +
    "duplicate, failed, dropped, deferred, retried (a failed " +
    "window read on a later try) or reextract, each with its reason, the window of turns it read, the model, tokens " +
    `in and out, and latency. The newest ${HISTORY_LIMIT}, oldest first.`,
  input: z.object({
    id: z.string().min(1).max(200).optional().describe("A memory's id."),
    key: z.string().trim().min(1).max(200).optional().describe("A key, as stored (subject.key)."),
    conversation_id: conversationIdParam.optional(),
    document_id: z.string().min(1).max(200).optional().describe("A document's id (memory_ingest_document)."),
    project_id: projectName.optional().describe("The project of `key` (default: default)."),
  }),
  output: z.object({
    events: z.array(
      z.object({
        event: z.string(),
        memory_id: z.string().nullable(),
        key: z.string().nullable(),
        sources: z.array(z.string()),
        conversation_id: z.string().nullable(),
        document_id: z.string().optional().describe("The document whose chunks the window read."),
        window: z.string().nullable(),
        model: z.string().nullable(),
        tokens_in: z.number().int().nullable(),
        tokens_out: z.number().int().nullable(),
        neurons: z.number().nullable(),
        latency_ms: z.number().nullable(),
        at: z.string(),
        superseded_by: z.string().nullable(),
        error: z.string().optional(),
        reason: z.string().optional().describe("Why: the guard, the timeline, the try, the role."),
      }),
    ),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const given = [input.id, input.key, input.conversation_id, input.document_id].filter((v) => v !== undefined);
    if (given.length !== 1)
      throw invalidParameter("id", "Give exactly one of id, key, conversation_id or document_id", {
        given: given.length,
      });
    const target: HistoryTarget =
      input.id !== undefined
        ? { memoryId: input.id }
        : input.key !== undefined
          ? { key: input.key, project: input.project_id ?? "default" }
          : input.document_id !== undefined
            ? { documentId: input.document_id }
            : { conversationId: input.conversation_id! };
    const events = await readHistory(ctx.scope, target);
    return {
      events: events.map((e) => ({
        event: e.event,
        memory_id: e.memoryId,
        key: e.key,
        sources: e.sources,
        conversation_id: e.conversationId,
        ...(e.documentId === null ? {} : { document_id: e.documentId }),
        window: e.windowId,
        model: e.model,
        tokens_in: e.tokensIn,
        tokens_out: e.tokensOut,
        neurons: e.neurons,
        latency_ms: e.latencyMs,
        at: iso(e.at),
        superseded_by: e.supersededBy,
        ...(e.error === null ? {} : { error: e.error }),
        ...(e.reason === null ? {} : { reason: e.reason }),
      })),
    };
  },
});
