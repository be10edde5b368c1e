import type { TenantScope } from "../../db/scope";
import { CURRENT_TASK, type SegmentSelection, selectionWhere, selectSegments } from "./segment-filters";
import { REFCOUNT_SQL, type Segment, snapshotLinkCounts, snapshotLinkMap, withoutSnapshotLinks } from "./segments";

/**
 * The working set of a project: its active (not stashed) segments. With a task (given, else the
 * project's current task) it narrows to that task's segments plus segments that belong to no task:
 * memories, documents and messages stored by other tools carry no task and stay visible to every task,
 * while other tasks' segments drop out.
 */
export function workingSetSelection(project: string, taskId: string | null | typeof CURRENT_TASK): SegmentSelection {
  return {
    projects: [project],
    tiers: ["active"],
    excludeSnapshots: true,
    ...(taskId !== null ? { workingSetTask: taskId } : {}),
  };
}

export interface ProjectTask {
  currentTaskId: string | null;
  previousTaskId: string | null;
  updatedAt: number;
}

export async function readProjectTask(scope: TenantScope, project: string): Promise<ProjectTask | null> {
  const row = await scope.d1
    .prepare(
      "SELECT current_task_id, previous_task_id, updated_at FROM project_tasks WHERE tenant_id = ? AND project = ?",
    )
    .bind(scope.tenantId, project)
    .first<{ current_task_id: string | null; previous_task_id: string | null; updated_at: number }>();
  return row
    ? { currentTaskId: row.current_task_id, previousTaskId: row.previous_task_id, updatedAt: row.updated_at }
    : null;
}

/** The task a call is about: the one given, else the project's current task, else none. */
export async function resolveTask(
  scope: TenantScope,
  project: string,
  taskId: string | undefined | null,
): Promise<string | null> {
  if (taskId) return taskId;
  return (await readProjectTask(scope, project))?.currentTaskId ?? null;
}

export interface WorkingSet {
  project: string;
  taskId: string | null;
  totalTokens: number;
  segmentCount: number;
  /** Latest touch of a segment in the set; null when it is empty. */
  lastUpdated: number | null;
  /** Most recently touched first, at most `limit`. */
  segments: Segment[];
}

/** The working set of a task; with no task given, of the project's current task, resolved in the same round trip. */
export async function readWorkingSet(
  scope: TenantScope,
  project: string,
  task: string | undefined,
  limit: number,
): Promise<WorkingSet> {
  const selection = workingSetSelection(project, task ?? CURRENT_TASK);
  const selected = await selectSegments(scope, selection, limit);
  let lastUpdated = selected.segments[0]?.touchedAt ?? null;
  if (selected.total > 0 && limit === 0) {
    const where = selectionWhere(scope, selection);
    lastUpdated =
      (
        await scope.d1
          .prepare(`SELECT MAX(i.touched_at) AS t FROM items i WHERE ${where.sql}`)
          .bind(...where.params)
          .first<{ t: number | null }>()
      )?.t ?? null;
  }
  return {
    project,
    taskId: selected.taskId,
    totalTokens: selected.totalTokens,
    segmentCount: selected.total,
    lastUpdated,
    segments: selected.segments,
  };
}

/** What GC scoring and usage metrics read for each working-set segment: no text, refcount included. */
export interface GcRow {
  id: string;
  type: string;
  tokens: number;
  pinned: boolean;
  generation: string;
  gcSurvivalCount: number;
  createdAt: number;
  touchedAt: number;
  taskId: string | null;
  filePath: string | null;
  refcount: number;
}

/** Every working-set segment with its refcount: one batch of two queries (no per-segment round trips). */
export async function readWorkingSetForGc(
  scope: TenantScope,
  project: string,
  taskId: string | null,
): Promise<GcRow[]> {
  const where = selectionWhere(scope, workingSetSelection(project, taskId));
  const [rows, snapshotLinks] = await scope.d1.batch<Record<string, unknown>>([
    scope.d1
      .prepare(
        `SELECT i.id, i.type, i.tokens, i.pinned, i.generation, i.gc_survival_count, i.created_at, i.touched_at, i.task_id, i.file_path, ${REFCOUNT_SQL} AS refcount
         FROM items i WHERE ${where.sql}`,
      )
      .bind(...where.params),
    snapshotLinkCounts(scope, [project]),
  ]);
  const fromSnapshots = snapshotLinkMap(snapshotLinks!.results);
  const results = rows!.results as {
    id: string;
    type: string;
    tokens: number;
    pinned: number;
    generation: string;
    gc_survival_count: number;
    created_at: number;
    touched_at: number;
    task_id: string | null;
    file_path: string | null;
    refcount: number;
  }[];
  return results.map((r) => ({
    id: r.id,
    type: r.type,
    tokens: r.tokens,
    pinned: r.pinned === 1,
    generation: r.generation,
    gcSurvivalCount: r.gc_survival_count,
    createdAt: r.created_at,
    touchedAt: r.touched_at,
    taskId: r.task_id,
    filePath: r.file_path,
    refcount: withoutSnapshotLinks(r.refcount, r.id, fromSnapshots),
  }));
}
