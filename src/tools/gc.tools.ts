import { z } from "zod";
import {
  analyzeUsage,
  type ContextDescriptors,
  DEFAULT_TOKEN_LIMIT,
  type IngestedContext,
  ingestDescriptors,
} from "../core/context/context-usage";
import { listProjects } from "../core/memory/projects";
import { analyzeGarbage, GC_POLICY, planPruning, pruneSegments } from "../core/working-set/gc";
import { readWorkingSet, resolveTask } from "../core/working-set/working-set";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, type AnyTool, defineTool, type ToolContext } from "./define-tool";
import { descriptorsParam, parseDescriptors, segmentIdsParam, taskIdParam } from "./gc-params";
import { contextGcPin, contextGcUnpin } from "./gc-pin";
import { contextRetrieveStashed, contextSearchStashed, contextStash } from "./gc-stash";
import { contextCreateTaskSnapshot, contextGetTaskContext, contextSetCurrentTask } from "./gc-tasks";
import { candidateSchema, candidateView, segmentErrorSchema, segmentSchema, segmentView } from "./gc-views";
import { iso, projectName } from "./params";

// Seed 004 (Out of Context): an agent's context as a managed heap. Segments are the items every other
// tool stores, so anything can be measured, pinned, stashed, retrieved and snapshotted here.

/** Most candidates one context_gc_analyze lists (total_candidates and estimated_tokens_freed count all). */
const MAX_LISTED_CANDIDATES = 100;

/** Descriptors ingested into the project under the call's task (task_id, else task_info, else the current task). */
async function ingestForCall(
  ctx: ToolContext,
  project: string,
  taskIdArg: string | undefined,
  descriptorsArg: Parameters<typeof parseDescriptors>[0],
): Promise<{ descriptors: ContextDescriptors | null; taskId: string | null; ingested: IngestedContext }> {
  const descriptors = parseDescriptors(descriptorsArg);
  const taskId = await resolveTask(ctx.scope, project, taskIdArg ?? descriptors?.taskId);
  const ingested = descriptors
    ? await ingestDescriptors(ctx.scope, ctx.services, project, taskId, descriptors)
    : { rootIds: new Set<string>(), rootFiles: new Set<string>(), segmentsWritten: 0 };
  return { descriptors, taskId, ingested };
}

// ---------------------------------------------------------------------------------------------------
// Monitoring

const contextAnalyzeUsage = defineTool({
  name: "context_analyze_usage",
  category: "gc",
  title: "Analyze context usage",
  description:
    "Analyze current context usage and return metrics, health score, and recommendations. Use it to see how much context is used, how " +
    "healthy it is and what to do; check periodically, especially as context grows. Warnings appear when usage crosses 60% (warning), " +
    "80% (high) and 90% (urgent). Pass context_descriptors (recent_messages, current_file, token_usage, segment_summaries, task_info) " +
    "to store what is in your context now as segments; token_usage.current, when given, is the usage measured (else the stored " +
    "tokens of the project's working set). token_limit defaults to 1,000,000 (or token_usage.limit). Looks only: no segment is moved.",
  input: z.object({
    project_id: projectName,
    context_descriptors: descriptorsParam,
    task_id: taskIdParam
      .optional()
      .describe(
        "Task the analysis (and ingested segments) belong to; default: task_info, else the project's current task.",
      ),
    token_limit: z
      .number()
      .int()
      .min(1000)
      .max(100_000_000)
      .optional()
      .describe(
        `Default: token_usage.limit from the descriptors, else CONTEXT_TOKEN_LIMIT (default ${DEFAULT_TOKEN_LIMIT}).`,
      ),
  }),
  output: z.object({
    usage_metrics: z.object({
      total_tokens: z.number().int(),
      total_segments: z.number().int(),
      tokens_by_type: z.record(z.string(), z.number()),
      segments_by_type: z.record(z.string(), z.number()),
      tokens_by_task: z.record(z.string(), z.number()),
      oldest_segment_age_hours: z.number().nullable(),
      newest_segment_age_hours: z.number().nullable(),
      pinned_segments_count: z.number().int(),
      pinned_tokens: z.number().int(),
      usage_percent: z.number(),
      estimated_remaining_tokens: z.number(),
    }),
    health_score: z.object({
      score: z.number(),
      usage_percent: z.number(),
      factors: z.object({ usage: z.number(), distribution: z.number(), age: z.number() }),
    }),
    recommendations: z.array(z.object({ priority: z.string(), message: z.string(), action: z.string().nullable() })),
    warnings: z.array(z.string()),
    suggested_actions: z.array(
      z.object({
        tool: z.string(),
        description: z.string(),
        arguments: z.record(z.string(), z.unknown()),
        estimated_tokens_freed: z.number(),
      }),
    ),
    impact_summary: z.object({
      pruning_candidates_count: z.number().int(),
      estimated_tokens_freed: z.number().int(),
      estimated_usage_after_pruning: z.number(),
    }),
    pruning_candidates_count: z.number().int(),
    token_limit: z.number().int(),
    task_id: z.string().nullable(),
    segments_ingested: z.number().int(),
  }),
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => {
    const { descriptors, taskId, ingested } = await ingestForCall(
      ctx,
      input.project_id,
      input.task_id,
      input.context_descriptors,
    );
    const tokenLimit = input.token_limit ?? descriptors?.tokenUsage?.limit ?? ctx.services.config.contextTokenLimit;
    const report = await analyzeUsage(ctx.scope, {
      project: input.project_id,
      taskId,
      tokenLimit,
      platformTokens: descriptors?.tokenUsage?.current ?? null,
      rootIds: ingested.rootIds,
      rootFiles: ingested.rootFiles,
    });
    const m = report.metrics;
    return {
      usage_metrics: {
        total_tokens: m.totalTokens,
        total_segments: m.totalSegments,
        tokens_by_type: m.tokensByType,
        segments_by_type: m.segmentsByType,
        tokens_by_task: m.tokensByTask,
        oldest_segment_age_hours: m.oldestSegmentAgeHours,
        newest_segment_age_hours: m.newestSegmentAgeHours,
        pinned_segments_count: m.pinnedSegmentsCount,
        pinned_tokens: m.pinnedTokens,
        usage_percent: m.usagePercent,
        estimated_remaining_tokens: m.estimatedRemainingTokens,
      },
      health_score: {
        score: report.health.score,
        usage_percent: report.health.usagePercent,
        factors: report.health.factors,
      },
      recommendations: report.recommendations,
      warnings: report.warnings,
      suggested_actions: report.suggestedActions.map((a) => ({
        tool: a.tool,
        description: a.description,
        arguments: a.arguments,
        estimated_tokens_freed: a.estimatedTokensFreed,
      })),
      impact_summary: {
        pruning_candidates_count: report.impact.pruningCandidatesCount,
        estimated_tokens_freed: report.impact.estimatedTokensFreed,
        estimated_usage_after_pruning: report.impact.estimatedUsageAfterPruning,
      },
      pruning_candidates_count: report.impact.pruningCandidatesCount,
      token_limit: tokenLimit,
      task_id: taskId,
      segments_ingested: ingested.segmentsWritten,
    };
  },
});

const contextGetWorkingSet = defineTool({
  name: "context_get_working_set",
  category: "gc",
  title: "Get the working set",
  description:
    "Get current working set segments for the active task. The working set is the project's active (not stashed) segments, most recently touched first. " +
    "With a task (task_id, else the project's current task) only that task's segments and segments that belong to no task are in it. " +
    "total_tokens and segment_count cover the whole set; segments lists the first `limit` (default 100).",
  input: z.object({
    project_id: projectName,
    task_id: taskIdParam.optional().describe("Default: the project's current task (context_set_current_task)."),
    limit: z.number().int().min(0).max(1000).default(100).describe("Most segments listed (totals count all)."),
    include_gc_candidates: z
      .boolean()
      .default(false)
      .describe(
        `Also list the ${MAX_LISTED_CANDIDATES} highest-scoring pruning candidates as context_gc_analyze scores them, without running a GC cycle (no survivals recorded).`,
      ),
  }),
  output: z.object({
    working_set: z.object({
      project_id: z.string(),
      task_id: z.string().nullable(),
      total_tokens: z.number().int(),
      last_updated: z.string().nullable(),
    }),
    segments: z.array(segmentSchema),
    total_tokens: z.number().int(),
    segment_count: z.number().int(),
    truncated: z.boolean(),
    gc_candidates: z.array(candidateSchema).optional(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    // GC scoring needs the task first; the plain read resolves the current task in its own query.
    const taskId = input.include_gc_candidates
      ? await resolveTask(ctx.scope, input.project_id, input.task_id)
      : input.task_id;
    const [set, analysis] = await Promise.all([
      readWorkingSet(ctx.scope, input.project_id, taskId ?? undefined, input.limit),
      input.include_gc_candidates
        ? analyzeGarbage(ctx.scope, { project: input.project_id, taskId: taskId ?? null, advanceGenerations: false })
        : null,
    ]);
    return {
      working_set: {
        project_id: input.project_id,
        task_id: set.taskId,
        total_tokens: set.totalTokens,
        last_updated: set.lastUpdated === null ? null : iso(set.lastUpdated),
      },
      segments: set.segments.map(segmentView),
      total_tokens: set.totalTokens,
      segment_count: set.segmentCount,
      truncated: set.segments.length < set.segmentCount,
      ...(analysis ? { gc_candidates: analysis.candidates.slice(0, MAX_LISTED_CANDIDATES).map(candidateView) } : {}),
    };
  },
});

// ---------------------------------------------------------------------------------------------------
// Pruning

const contextGcAnalyze = defineTool({
  name: "context_gc_analyze",
  category: "gc",
  title: "Find pruning candidates",
  description:
    "Analyze context and identify pruning candidates using GC heuristics. Each working-set segment is scored (0..1, higher = likelier " +
    "garbage) from time since last touch, content type (logs most, decisions least), refcount (links pointing at it), generation and " +
    `GC survivals; pinned segments and the segments in context_descriptors are never candidates. Lists the ${MAX_LISTED_CANDIDATES} highest ` +
    "(total_candidates counts all). Each analysis is a GC cycle: segments that are not candidates survive it, and after " +
    `${GC_POLICY.oldAfterSurvivals} survivals move from the young to the old generation (less likely garbage). With target_tokens, ` +
    "pruning_plan lists the segments to stash to free that many tokens; pass its stash_segments to context_gc_prune.",
  input: z.object({
    project_id: projectName,
    context_descriptors: descriptorsParam,
    task_id: taskIdParam.optional().describe("Default: task_info, else the project's current task."),
    target_tokens: z.number().int().min(1).max(100_000_000).optional().describe("Tokens to free; adds a pruning_plan."),
  }),
  output: z.object({
    pruning_candidates: z.array(candidateSchema),
    total_candidates: z.number().int(),
    estimated_tokens_freed: z.number().int(),
    pruning_plan: z
      .object({
        candidates: z.array(candidateSchema),
        total_tokens_freed: z.number().int(),
        stash_segments: z.array(z.string()),
        delete_segments: z.array(z.string()),
        reason: z.string(),
      })
      .optional(),
    analyzed_segments: z.number().int(),
    task_id: z.string().nullable(),
  }),
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => {
    const { taskId, ingested } = await ingestForCall(ctx, input.project_id, input.task_id, input.context_descriptors);
    const analysis = await analyzeGarbage(ctx.scope, {
      project: input.project_id,
      taskId,
      rootIds: ingested.rootIds,
      rootFiles: ingested.rootFiles,
      advanceGenerations: true,
    });
    const plan = input.target_tokens !== undefined ? planPruning(analysis.candidates, input.target_tokens) : null;
    return {
      pruning_candidates: analysis.candidates.slice(0, MAX_LISTED_CANDIDATES).map(candidateView),
      total_candidates: analysis.candidates.length,
      estimated_tokens_freed: analysis.estimatedTokensFreed,
      ...(plan
        ? {
            pruning_plan: {
              candidates: plan.candidates.map(candidateView),
              total_tokens_freed: plan.totalTokensFreed,
              stash_segments: plan.stashSegments,
              delete_segments: plan.deleteSegments,
              reason: plan.reason,
            },
          }
        : {}),
      analyzed_segments: analysis.analyzedSegments,
      task_id: taskId,
    };
  },
});

const contextGcPrune = defineTool({
  name: "context_gc_prune",
  category: "gc",
  title: "Prune segments",
  description:
    'Execute pruning plan to free context space. Action "stash" moves the segments out of the working set (nothing is lost; ' +
    'context_retrieve_stashed brings them back), action "delete" removes them for good with their chunks, vectors, links and cached ' +
    "contexts and needs confirm: true. Pinned segments cannot be pruned; they, unknown ids and already stashed ones come back in errors " +
    "(code PERMISSION_DENIED, SEGMENT_NOT_FOUND, INVALID_PARAMETER) while the rest are pruned.",
  input: z.object({
    project_id: projectName,
    segment_ids: segmentIdsParam,
    action: z.enum(["stash", "delete"]),
    confirm: z.boolean().default(false).describe("Must be true for action delete."),
  }),
  output: z.object({
    pruned_segments: z.array(z.string()),
    tokens_freed: z.number().int(),
    action: z.enum(["stashed", "deleted"]),
    errors: z.array(segmentErrorSchema),
  }),
  annotations: ANNOTATIONS.destroy,
  handler: async (input, ctx) => {
    if (input.action === "delete" && !input.confirm) {
      throw invalidParameter(
        "confirm",
        'Delete action requires confirm=true: deleting removes the segments for good (use action "stash" to keep them retrievable)',
      );
    }
    const outcome = await pruneSegments(ctx.scope, ctx.services, input.project_id, input.segment_ids, input.action);
    return {
      pruned_segments: outcome.prunedSegments,
      tokens_freed: outcome.tokensFreed,
      action: input.action === "stash" ? ("stashed" as const) : ("deleted" as const),
      errors: outcome.errors,
    };
  },
});

const contextListProjects = defineTool({
  name: "context_list_projects",
  category: "gc",
  title: "List projects",
  description:
    "List all available project IDs. Lists every project holding stored or stashed segments that this key may read; use it when you do not " +
    "know the project_id or want to search across projects.",
  input: z.object({}),
  output: z.object({ projects: z.array(z.string()) }),
  annotations: ANNOTATIONS.read,
  handler: async (_input, ctx) => ({ projects: await listProjects(ctx.scope, ctx.caller.projects) }),
});

/** Seed 004's working-set, GC, stash and task tools. */
export const GC_TOOLS: readonly AnyTool[] = [
  contextAnalyzeUsage,
  contextGetWorkingSet,
  contextGcAnalyze,
  contextGcPrune,
  contextGcPin,
  contextGcUnpin,
  contextStash,
  contextSearchStashed,
  contextRetrieveStashed,
  contextListProjects,
  contextSetCurrentTask,
  contextGetTaskContext,
  contextCreateTaskSnapshot,
];
