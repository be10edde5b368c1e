import { z } from "zod";
import { retrieveStashed, searchStashed, stashMatching } from "../core/working-set/stash";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { filtersParam, parseFilters } from "./gc-params";
import { segmentErrorSchema, segmentSchema, segmentView } from "./gc-views";
import { projectName, readableProjects } from "./params";

// Seed 004's stash: segments moved out of the working set (tier "stashed") and found or brought back
// by keyword and metadata filters.

const queryParam = z.string().max(2000).optional();

function cleanQuery(query: string | undefined): string | undefined {
  return query !== undefined && query.trim().length > 0 ? query : undefined;
}

const KEYWORD_NOTE = 'query matches segments containing every one of its words (stemmed: "bugs" finds "bug").';

export const contextStash = defineTool({
  name: "context_stash",
  category: "gc",
  title: "Stash segments",
  description:
    "PUT CONTEXT: Move segments from active context to stashed storage by filtering. This is the primary tool for freeing up active " +
    `context space: every active segment of the project matching query and filters is stashed (nothing is deleted). ${KEYWORD_NOTE} ` +
    'Give query or filters (or both). Pinned segments stay and are listed in errors. A tag "snapshot:<id>" selects the segments that snapshot captured.',
  input: z.object({
    project_id: projectName.default("default").describe("Default 'default'; name the project when you can."),
    query: queryParam,
    filters: filtersParam,
  }),
  output: z.object({
    stashed_segments: z.array(z.string()),
    tokens_stashed: z.number().int(),
    segments_matched: z.number().int(),
    errors: z.array(segmentErrorSchema),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const { filter, applied } = parseFilters(input.filters);
    const query = cleanQuery(input.query);
    if (query === undefined && Object.keys(applied).length === 0) {
      throw invalidParameter(
        "query",
        'Give a query or filters to choose what to stash (to stash everything, use filters {"created_before": <now>})',
      );
    }
    const outcome = await stashMatching(ctx.scope, input.project_id, query, filter);
    return {
      stashed_segments: outcome.stashedSegments,
      tokens_stashed: outcome.tokensStashed,
      segments_matched: outcome.segmentsMatched,
      errors: outcome.errors,
    };
  },
});

export const contextSearchStashed = defineTool({
  name: "context_search_stashed",
  category: "gc",
  title: "Search the stash",
  description:
    "SEARCH STASHED: Search stashed segments by keyword and metadata filters (read-only). Use it to discover what is in stashed storage " +
    `before retrieving; task snapshots are stashed records of type "snapshot" and are found here too. ${KEYWORD_NOTE} Without project_id ` +
    "every project this key may read is searched. total_matches counts all matches; segments lists the first `limit`, most recently touched first.",
  input: z.object({
    project_id: projectName.optional().describe("Omit to search all projects."),
    query: queryParam,
    filters: filtersParam,
    limit: z.number().int().min(1).max(500).default(50),
  }),
  output: z.object({
    segments: z.array(segmentSchema),
    total_matches: z.number().int(),
    query: z.string().nullable(),
    filters_applied: z.record(z.string(), z.unknown()),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const { filter, applied } = parseFilters(input.filters);
    const query = cleanQuery(input.query);
    const found = await searchStashed(ctx.scope, readableProjects(ctx, input.project_id), query, filter, input.limit);
    return {
      segments: found.segments.map(segmentView),
      total_matches: found.total,
      query: query ?? null,
      filters_applied: applied,
    };
  },
});

export const contextRetrieveStashed = defineTool({
  name: "context_retrieve_stashed",
  category: "gc",
  title: "Retrieve stashed segments",
  description:
    "FETCH CONTEXT: Retrieve stashed segments by searching with query and filters. This is the primary tool for accessing previously " +
    `stashed context. ${KEYWORD_NOTE} With move_to_active: true every match (not only the listed ones) returns to the working set. ` +
    'To restore a task snapshot in one call: filters {"tags": ["snapshot:<snapshot_id>"]} with move_to_active: true.',
  input: z.object({
    project_id: projectName.default("default").describe("Default 'default'."),
    query: queryParam,
    filters: filtersParam,
    move_to_active: z.boolean().default(false),
    limit: z
      .number()
      .int()
      .min(1)
      .max(500)
      .default(50)
      .describe("Most segments listed in retrieved_segments (segments_found counts all)."),
  }),
  output: z.object({
    retrieved_segments: z.array(segmentSchema),
    moved_to_active: z.array(z.string()).optional(),
    segments_found: z.number().int(),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    const { filter } = parseFilters(input.filters);
    const outcome = await retrieveStashed(
      ctx.scope,
      input.project_id,
      cleanQuery(input.query),
      filter,
      input.limit,
      input.move_to_active,
    );
    return {
      retrieved_segments: outcome.segments.map(segmentView),
      ...(outcome.movedToActive !== null ? { moved_to_active: outcome.movedToActive } : {}),
      segments_found: outcome.segmentsFound,
    };
  },
});
