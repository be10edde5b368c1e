import { randomId } from "../../crypto";
import type { TenantScope } from "../../db/scope";
import { invalidParameter } from "../../errors";
import type { Services } from "../../ports";
import { SNAPSHOT_TAG_PREFIX } from "../memory/item-filters";
import { writeItems } from "../memory/items";
import { type SelectedSegments, selectionWhere, selectSegments } from "./segment-filters";
import { workingSetSelection } from "./working-set";

/** Sets (or with null clears) a project's current task; returns the task that was current before. */
export async function setCurrentTask(
  scope: TenantScope,
  project: string,
  taskId: string | null,
): Promise<{ previousTaskId: string | null }> {
  const row = await scope.d1
    .prepare(
      `INSERT INTO project_tasks (tenant_id, project, current_task_id, previous_task_id, updated_at) VALUES (?, ?, ?, NULL, ?)
       ON CONFLICT (tenant_id, project) DO UPDATE SET previous_task_id = project_tasks.current_task_id, current_task_id = excluded.current_task_id, updated_at = excluded.updated_at
       RETURNING previous_task_id`,
    )
    .bind(scope.tenantId, project, taskId, Date.now())
    .first<{ previous_task_id: string | null }>();
  return { previousTaskId: row?.previous_task_id ?? null };
}

/** Every segment of a task, from all tiers (snapshot records excluded: they describe segments, they are not context). */
export async function readTaskContext(
  scope: TenantScope,
  project: string,
  taskId: string,
  limit: number,
): Promise<SelectedSegments> {
  return selectSegments(
    scope,
    { projects: [project], tiers: ["active", "stashed"], excludeSnapshots: true, filter: { taskId } },
    limit,
  );
}

/** Segments listed by name in a snapshot's text (all are in its metadata). */
const SNAPSHOT_LISTED = 200;
const SNAPSHOT_LINE_CHARS = 120;
/** Most segments one snapshot captures (their ids are kept in the snapshot's metadata row). */
export const MAX_SNAPSHOT_SEGMENTS = 20_000;

export interface Snapshot {
  snapshotId: string;
  /** The snapshot record (a stashed item) that holds it. */
  itemId: string;
  taskId: string | null;
  name: string | null;
  segmentIds: string[];
  tokens: number;
  createdAt: number;
}

/**
 * Captures the working set of a task (the task's active segments plus those that belong to no task;
 * with no task, the project's whole working set) as a snapshot record in the stash: an item of kind
 * 'snapshot' tagged "snapshot", "snapshot:<id>" and "task:<task>", whose metadata lists the captured
 * segment ids and whose text lists them readably, so search_stashed finds it by name, task or content.
 * A tag filter "snapshot:<id>" on stash, search or retrieve stands for exactly the captured segments:
 * context_retrieve_stashed {filters: {tags: ["snapshot:<id>"]}, move_to_active: true} restores them.
 */
export async function createTaskSnapshot(
  scope: TenantScope,
  services: Services,
  project: string,
  taskId: string | null,
  name: string | null,
): Promise<Snapshot> {
  const where = selectionWhere(scope, workingSetSelection(project, taskId));
  const [all, heads] = await scope.d1.batch<Record<string, unknown>>([
    scope.d1
      .prepare(`SELECT i.id, i.tokens FROM items i WHERE ${where.sql} ORDER BY i.touched_at DESC, i.id LIMIT ?`)
      .bind(...where.params, MAX_SNAPSHOT_SEGMENTS + 1),
    scope.d1
      .prepare(
        `SELECT i.type, substr(i.content, 1, ${SNAPSHOT_LINE_CHARS * 2}) AS head FROM items i WHERE ${where.sql} ORDER BY i.touched_at DESC, i.id LIMIT ?`,
      )
      .bind(...where.params, SNAPSHOT_LISTED),
  ]);
  const captured = all!.results as { id: string; tokens: number }[];
  if (captured.length > MAX_SNAPSHOT_SEGMENTS) {
    throw invalidParameter(
      "task_id",
      `The working set has more than ${MAX_SNAPSHOT_SEGMENTS} segments, the most one snapshot captures; narrow it to a task (task_id) or stash what is not needed first`,
    );
  }
  const snapshotId = randomId("snapshot-");
  const tokens = captured.reduce((s, r) => s + r.tokens, 0);
  const createdAt = Date.now();
  const lines = (heads!.results as { type: string; head: string }[]).map((h) => `- [${h.type}] ${firstLine(h.head)}`);
  const more = captured.length - lines.length;
  const content = [
    `Task snapshot ${name ? `"${name}" ` : ""}(${snapshotId}) of ${taskId ? `task ${taskId}` : "the whole working set"} in project ${project}, ` +
      `${new Date(createdAt).toISOString()}: ${captured.length} segment(s), ${tokens} tokens.`,
    ...lines,
    ...(more > 0 ? [`... and ${more} more segment(s).`] : []),
  ].join("\n");
  const [written] = await writeItems(scope, services, [
    {
      project,
      kind: "snapshot",
      type: "snapshot",
      content,
      tier: "stashed",
      taskId,
      tags: ["snapshot", `${SNAPSHOT_TAG_PREFIX}${snapshotId}`, ...(taskId ? [`task:${taskId}`] : [])],
      metadata: {
        snapshot_id: snapshotId,
        name,
        task_id: taskId,
        segment_ids: captured.map((r) => r.id),
        tokens,
        created_at: new Date(createdAt).toISOString(),
      },
      createdAt,
    },
  ]);
  return { snapshotId, itemId: written!.id, taskId, name, segmentIds: captured.map((r) => r.id), tokens, createdAt };
}

function firstLine(text: string): string {
  const line =
    text
      .split("\n")
      .find((l) => l.trim().length > 0)
      ?.trim() ?? "";
  return line.length > SNAPSHOT_LINE_CHARS ? `${line.slice(0, SNAPSHOT_LINE_CHARS - 1)}…` : line;
}
