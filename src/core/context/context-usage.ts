import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import type { ItemType, NewItem } from "../memory/item-types";
import { writeItems } from "../memory/items";
import { analyzeGarbage, type GcAnalysis, planPruning } from "../working-set/gc";
import { slices } from "../working-set/segments";

/** Seed 004's default token limit ("from config, typically 1 million"). */
export const DEFAULT_TOKEN_LIMIT = 1_000_000;
/** Usage thresholds (percent of the token limit) and their warning levels. */
export const USAGE_THRESHOLDS = [
  { percent: 90, level: "URGENT" },
  { percent: 80, level: "HIGH" },
  { percent: 60, level: "WARNING" },
] as const;
/** Where a suggested pruning aims to bring usage back to. */
const TARGET_USAGE_PERCENT = 50;
const FRESH_HOURS = 24;

/** What a platform tells us about its context (seed 004's context_descriptors), validated. */
export interface ContextDescriptors {
  recentMessages: { content: string; role: string | null; createdAt?: number }[];
  currentFile: { path: string; lineStart: number | null; lineEnd: number | null; content: string | null } | null;
  segmentSummaries: { content: string; type: ItemType; filePath: string | null }[];
  /** task_info's task id, if it names one. */
  taskId: string | null;
  tokenUsage: { current: number | null; limit: number | null } | null;
}

export interface IngestedContext {
  /** Items that hold what the platform has in context now: GC roots. */
  rootIds: Set<string>;
  /** current_file's path: its segments are roots too. */
  rootFiles: Set<string>;
  segmentsWritten: number;
}

/**
 * Stores the descriptors' texts as segments of the project (recent messages as type message, the current
 * file's text as code, segment summaries as notes or their own type), tagged with the task, so they join
 * the one heap every tool shares. Identical text already stored in the project is not stored again; it is
 * touched instead (it is in use). Nothing is written for a descriptor without text.
 */
export async function ingestDescriptors(
  scope: TenantScope,
  services: Services,
  project: string,
  taskId: string | null,
  d: ContextDescriptors,
): Promise<IngestedContext> {
  const items: NewItem[] = [
    ...d.recentMessages.map(
      (m): NewItem => ({
        project,
        kind: "segment",
        type: "message",
        content: m.content,
        role: m.role,
        taskId,
        createdAt: m.createdAt,
      }),
    ),
    ...(d.currentFile?.content
      ? [
          {
            project,
            kind: "segment" as const,
            type: "code" as const,
            content: d.currentFile.content,
            filePath: d.currentFile.path,
            lineStart: d.currentFile.lineStart,
            lineEnd: d.currentFile.lineEnd,
            taskId,
          },
        ]
      : []),
    ...d.segmentSummaries.map(
      (s): NewItem => ({ project, kind: "segment", type: s.type, content: s.content, filePath: s.filePath, taskId }),
    ),
  ];
  const rootFiles = new Set(d.currentFile ? [d.currentFile.path] : []);
  if (items.length === 0) return { rootIds: new Set(), rootFiles, segmentsWritten: 0 };
  const written = await writeItems(scope, services, items);
  const existing = [...new Set(written.filter((w) => w.duplicateOf !== null).map((w) => w.id))];
  if (existing.length > 0) {
    const touch = scope.d1.prepare(
      "UPDATE items SET touched_at = MAX(touched_at, ?) WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
    );
    const now = Date.now();
    await scope.d1.batch(slices(existing).map((ids) => touch.bind(now, scope.tenantId, JSON.stringify(ids))));
  }
  return {
    rootIds: new Set(written.map((w) => w.id)),
    rootFiles,
    segmentsWritten: written.filter((w) => w.duplicateOf === null).length,
  };
}

export interface UsageRequest {
  project: string;
  taskId: string | null;
  tokenLimit: number;
  /** The platform's own count of its context (token_usage.current); else the working set's stored tokens. */
  platformTokens: number | null;
  rootIds: ReadonlySet<string>;
  rootFiles: ReadonlySet<string>;
}

export interface Recommendation {
  priority: "low" | "medium" | "high" | "urgent";
  message: string;
  /** The tool to call, or null when nothing needs doing. */
  action: string | null;
}

export interface SuggestedAction {
  tool: string;
  description: string;
  arguments: Record<string, unknown>;
  estimatedTokensFreed: number;
}

export interface UsageReport {
  metrics: {
    totalTokens: number;
    totalSegments: number;
    tokensByType: Record<string, number>;
    segmentsByType: Record<string, number>;
    tokensByTask: Record<string, number>;
    oldestSegmentAgeHours: number | null;
    newestSegmentAgeHours: number | null;
    pinnedSegmentsCount: number;
    pinnedTokens: number;
    usagePercent: number;
    estimatedRemainingTokens: number;
  };
  health: { score: number; usagePercent: number; factors: { usage: number; distribution: number; age: number } };
  recommendations: Recommendation[];
  warnings: string[];
  suggestedActions: SuggestedAction[];
  impact: { pruningCandidatesCount: number; estimatedTokensFreed: number; estimatedUsageAfterPruning: number };
  analysis: GcAnalysis;
}

/**
 * Usage of a project's working set against a token limit: metrics by type and task, a health score
 * (0-100) from three factors in 0..1, warnings at 60 / 80 / 90 %, recommendations and concrete tool calls.
 *
 *   usage        1 - usage% / 100
 *   distribution share of the working set's tokens that are not pruning candidates (garbage)
 *   age          share of tokens touched in the last 24 h (pinned segments count as fresh)
 *   score        100 x (0.5 usage + 0.25 distribution + 0.25 age)
 *
 * It looks only: candidates come from the GC heuristics without recording a GC cycle.
 */
export async function analyzeUsage(scope: TenantScope, request: UsageRequest, now = Date.now()): Promise<UsageReport> {
  const analysis = await analyzeGarbage(scope, {
    project: request.project,
    taskId: request.taskId,
    rootIds: request.rootIds,
    rootFiles: request.rootFiles,
    advanceGenerations: false,
    now,
  });
  const rows = analysis.rows;
  const tokensByType: Record<string, number> = {};
  const segmentsByType: Record<string, number> = {};
  const tokensByTask: Record<string, number> = {};
  let pinnedCount = 0;
  let pinnedTokens = 0;
  let freshTokens = 0;
  let oldest: number | null = null;
  let newest: number | null = null;
  for (const row of rows) {
    tokensByType[row.type] = (tokensByType[row.type] ?? 0) + row.tokens;
    segmentsByType[row.type] = (segmentsByType[row.type] ?? 0) + 1;
    if (row.taskId !== null) tokensByTask[row.taskId] = (tokensByTask[row.taskId] ?? 0) + row.tokens;
    if (row.pinned) {
      pinnedCount++;
      pinnedTokens += row.tokens;
    }
    if (row.pinned || now - row.touchedAt <= FRESH_HOURS * 3_600_000) freshTokens += row.tokens;
    oldest = oldest === null ? row.createdAt : Math.min(oldest, row.createdAt);
    newest = newest === null ? row.createdAt : Math.max(newest, row.createdAt);
  }
  const totalTokens = analysis.analyzedTokens;
  const used = request.platformTokens ?? totalTokens;
  const usagePercent = round((used / request.tokenLimit) * 100, 2);
  const factors = {
    usage: round(clamp01(1 - usagePercent / 100), 3),
    distribution: round(totalTokens === 0 ? 1 : 1 - analysis.estimatedTokensFreed / totalTokens, 3),
    age: round(totalTokens === 0 ? 1 : freshTokens / totalTokens, 3),
  };
  const score = round(100 * (0.5 * factors.usage + 0.25 * factors.distribution + 0.25 * factors.age), 1);
  const estimatedUsageAfterPruning = round(
    (Math.max(0, used - analysis.estimatedTokensFreed) / request.tokenLimit) * 100,
    2,
  );

  const crossed = USAGE_THRESHOLDS.find((t) => usagePercent >= t.percent);
  const warnings = crossed
    ? [
        `${crossed.level}: context usage at ${usagePercent}% of ${request.tokenLimit} tokens (threshold ${crossed.percent}%)`,
      ]
    : [];
  const recommendations: Recommendation[] = [];
  const suggestedActions: SuggestedAction[] = [];
  const toFree = Math.max(0, Math.ceil(used - (TARGET_USAGE_PERCENT / 100) * request.tokenLimit));
  if (usagePercent >= 90) {
    recommendations.push({
      priority: "urgent",
      message: `Context usage is ${usagePercent}%: prune now by stashing the pruning candidates (context_gc_prune with action "stash")`,
      action: "context_gc_prune",
    });
  } else if (usagePercent >= 80) {
    recommendations.push({
      priority: "high",
      message: `Context usage is ${usagePercent}%: stash segments you no longer need (context_stash by keyword or filters, or context_gc_prune)`,
      action: "context_stash",
    });
  } else if (usagePercent >= 60) {
    recommendations.push({
      priority: "medium",
      message: `Context usage is ${usagePercent}%: review pruning candidates before it grows further`,
      action: "context_gc_analyze",
    });
  } else {
    recommendations.push({ priority: "low", message: "Context usage is healthy", action: null });
  }
  if (usagePercent < 60 && analysis.candidates.length > 0 && analysis.estimatedTokensFreed >= 0.1 * totalTokens) {
    recommendations.push({
      priority: "low",
      message: `${analysis.candidates.length} segment(s) holding ${analysis.estimatedTokensFreed} tokens look like garbage (old, unreferenced or logs); review them with context_gc_analyze`,
      action: "context_gc_analyze",
    });
  }
  if (totalTokens > 0 && pinnedTokens > 0.5 * totalTokens) {
    recommendations.push({
      priority: "medium",
      message: `Pinned segments hold ${Math.round((pinnedTokens / totalTokens) * 100)}% of the working set and can never be pruned; unpin what is no longer essential`,
      action: "context_gc_unpin",
    });
  }
  const tasks = Object.keys(tokensByTask).length;
  if (request.taskId === null && tasks >= 2) {
    recommendations.push({
      priority: "low",
      message: `Segments of ${tasks} tasks share the working set; set the current task to narrow it to one`,
      action: "context_set_current_task",
    });
  }
  if (usagePercent >= 60) {
    suggestedActions.push({
      tool: "context_gc_analyze",
      description: `Find pruning candidates and a plan to free ${toFree} tokens (back to ${TARGET_USAGE_PERCENT}% usage)`,
      arguments: { project_id: request.project, target_tokens: Math.max(1, toFree) },
      estimatedTokensFreed: Math.min(toFree, analysis.estimatedTokensFreed),
    });
  }
  if (usagePercent >= 80 && analysis.candidates.length > 0) {
    const plan = planPruning(analysis.candidates, Math.max(1, toFree));
    suggestedActions.push({
      tool: "context_gc_prune",
      description: `Stash the ${plan.stashSegments.length} highest-scoring pruning candidate(s); nothing is deleted and context_retrieve_stashed brings them back`,
      arguments: { project_id: request.project, segment_ids: plan.stashSegments, action: "stash" },
      estimatedTokensFreed: plan.totalTokensFreed,
    });
  }
  return {
    metrics: {
      totalTokens,
      totalSegments: rows.length,
      tokensByType,
      segmentsByType,
      tokensByTask,
      oldestSegmentAgeHours: oldest === null ? null : round((now - oldest) / 3_600_000, 2),
      newestSegmentAgeHours: newest === null ? null : round((now - newest) / 3_600_000, 2),
      pinnedSegmentsCount: pinnedCount,
      pinnedTokens,
      usagePercent,
      estimatedRemainingTokens: Math.max(0, request.tokenLimit - used),
    },
    health: { score, usagePercent, factors },
    recommendations,
    warnings,
    suggestedActions,
    impact: {
      pruningCandidatesCount: analysis.candidates.length,
      estimatedTokensFreed: analysis.estimatedTokensFreed,
      estimatedUsageAfterPruning,
    },
    analysis,
  };
}

function clamp01(n: number): number {
  return Math.min(1, Math.max(0, n));
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
