import { z } from "zod";
import { createTaskSnapshot, readTaskContext, setCurrentTask } from "../core/working-set/tasks";
import { resolveTask } from "../core/working-set/working-set";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { taskIdParam } from "./gc-params";
import { segmentSchema, segmentView } from "./gc-views";
import { iso, projectName } from "./params";

// Seed 004's task tools: the current task of a project, a task's segments, and task snapshots.

export const contextSetCurrentTask = defineTool({
  name: "context_set_current_task",
  category: "gc",
  title: "Set the current task",
  description:
    "Set the active task ID for a project, updating the working set. From now on context_get_working_set, context_gc_analyze and " +
    "context_analyze_usage default to this task, whose working set holds its own segments and those that belong to no task. " +
    "task_id null clears the current task. Returns the task that was current before.",
  input: z.object({ project_id: projectName, task_id: taskIdParam.nullable().default(null) }),
  output: z.object({ project_id: z.string(), task_id: z.string().nullable(), previous_task_id: z.string().nullable() }),
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => {
    const { previousTaskId } = await setCurrentTask(ctx.scope, input.project_id, input.task_id);
    return { project_id: input.project_id, task_id: input.task_id, previous_task_id: previousTaskId };
  },
});

export const contextGetTaskContext = defineTool({
  name: "context_get_task_context",
  category: "gc",
  title: "Get a task's segments",
  description:
    "Get all context segments for a specific task, from all tiers (working and stashed). Most recently touched first; without task_id " +
    "the project's current task is used. total_tokens and segment_count cover all; segments lists the first `limit`.",
  input: z.object({
    project_id: projectName,
    task_id: taskIdParam.optional().describe("Default: the project's current task."),
    limit: z.number().int().min(0).max(1000).default(100),
  }),
  output: z.object({
    task_id: z.string(),
    segments: z.array(segmentSchema),
    total_tokens: z.number().int(),
    segment_count: z.number().int(),
    truncated: z.boolean(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const taskId = await resolveTask(ctx.scope, input.project_id, input.task_id);
    if (taskId === null)
      throw invalidParameter(
        "task_id",
        `Invalid parameter 'task_id': none given and project '${input.project_id}' has no current task (context_set_current_task)`,
      );
    const found = await readTaskContext(ctx.scope, input.project_id, taskId, input.limit);
    return {
      task_id: taskId,
      segments: found.segments.map(segmentView),
      total_tokens: found.totalTokens,
      segment_count: found.total,
      truncated: found.segments.length < found.total,
    };
  },
});

export const contextCreateTaskSnapshot = defineTool({
  name: "context_create_task_snapshot",
  category: "gc",
  title: "Snapshot a task",
  description:
    "Create a snapshot of current task state for later retrieval. It records which segments are in the task's working set now (without task, " +
    "the project's whole working set). Use it before switching tasks or a major cleanup. Snapshots are stored in stashed storage with " +
    'the tags "snapshot" and "snapshot:<snapshot_id>"; restore exactly the captured segments in one call with context_retrieve_stashed ' +
    '{filters: {"tags": ["snapshot:<snapshot_id>"]}, move_to_active: true}.',
  input: z.object({
    project_id: projectName,
    task_id: taskIdParam.optional().describe("Default: the project's current task."),
    name: z.string().min(1).max(200).optional(),
  }),
  output: z.object({
    snapshot_id: z.string(),
    task_id: z.string().nullable(),
    name: z.string().nullable(),
    segments_snapshot: z.number().int(),
    tokens_snapshot: z.number().int(),
    created_at: z.string(),
  }),
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => {
    const taskId = await resolveTask(ctx.scope, input.project_id, input.task_id);
    const snapshot = await createTaskSnapshot(ctx.scope, ctx.services, input.project_id, taskId, input.name ?? null);
    return {
      snapshot_id: snapshot.snapshotId,
      task_id: snapshot.taskId,
      name: snapshot.name,
      segments_snapshot: snapshot.segmentIds.length,
      tokens_snapshot: snapshot.tokens,
      created_at: iso(snapshot.createdAt),
    };
  },
});
