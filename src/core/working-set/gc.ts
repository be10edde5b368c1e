import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { deleteItems } from "../memory/delete-items";
import {
  readSegmentKeys,
  type SegmentError,
  type SegmentKey,
  segmentNotFound,
  segmentPinned,
  slices,
} from "./segments";
import { stashItems } from "./stash";
import { type GcRow, readWorkingSetForGc } from "./working-set";

/**
 * Garbage collection over a working set, as seed 004 describes it: segments are scored from age,
 * generation, survivals, refcount and type; pinned segments and the roots (what the platform says is
 * in its context right now) are never candidates. Every analysis is a GC cycle: each analyzed segment
 * that is not a candidate survives it (gc_survival_count + 1) and is promoted young -> old after
 * OLD_AFTER_SURVIVALS survivals. As in a generational GC, segments that survived are less likely garbage.
 *
 * score = (0.5 x age + 0.3 x type + 0.2 x youth) / (1 + 0.5 x refcount), in 0..1
 *   age    1 - exp(-hours since last touch / 24): 0 now, 0.63 after a day, 0.86 after two
 *   type   how collectable the content type is (TYPE_COLLECTABILITY: logs 1 ... decisions 0.1)
 *   youth  1 / (1 + survivals), halved in the old generation
 *   refcount divides: a referenced segment is reachable, so likelier live (two references keep any segment out).
 * A segment is a candidate when its score is at least CANDIDATE_MIN_SCORE (0.5): a fresh unreferenced log at
 * once, an unreferenced young note after ~7 idle hours, a message after ~9, a decision after ~19; with one
 * reference a note after ~32 hours.
 */
export const GC_POLICY = {
  candidateMinScore: 0.5,
  oldAfterSurvivals: 2,
  ageScaleHours: 24,
  weights: { age: 0.5, type: 0.3, youth: 0.2 },
  /** The score is divided by 1 + refcountDamping x refcount. */
  refcountDamping: 0.5,
  /** Most segments one pruning plan proposes (context_gc_prune takes as many per call). */
  maxPlanSegments: 1000,
} as const;

/** 1 = typical garbage (tool output, logs), 0 = keep (snapshots are records, decisions are rarely garbage). */
export const TYPE_COLLECTABILITY: Record<string, number> = {
  log: 1,
  error: 0.7,
  data: 0.7,
  test: 0.6,
  note: 0.6,
  message: 0.5,
  document: 0.5,
  reference: 0.4,
  code: 0.4,
  config: 0.3,
  summary: 0.2,
  task: 0.2,
  decision: 0.1,
  snapshot: 0,
};
const DEFAULT_COLLECTABILITY = 0.5;

export interface PruningCandidate {
  segmentId: string;
  score: number;
  tokens: number;
  reason: string;
  segmentType: string;
  ageHours: number;
}

export function scoreSegment(row: GcRow, now: number): { score: number; ageHours: number; reason: string } {
  const ageHours = Math.max(0, now - row.touchedAt) / 3_600_000;
  const typeScore = TYPE_COLLECTABILITY[row.type] ?? DEFAULT_COLLECTABILITY;
  const youth = (row.generation === "old" ? 0.5 : 1) / (1 + row.gcSurvivalCount);
  const w = GC_POLICY.weights;
  const base = w.age * (1 - Math.exp(-ageHours / GC_POLICY.ageScaleHours)) + w.type * typeScore + w.youth * youth;
  const score = base / (1 + GC_POLICY.refcountDamping * row.refcount);
  const reasons: string[] = [];
  if (ageHours >= 24) reasons.push(`old (${round(ageHours, 1)}h since last touch)`);
  else if (ageHours >= 1) reasons.push(`idle ${round(ageHours, 1)}h`);
  if (row.refcount === 0) reasons.push("no references");
  else if (row.refcount <= 2) reasons.push(`low refcount (${row.refcount})`);
  if (typeScore >= 0.7) reasons.push(`collectable type (${row.type})`);
  if (row.generation !== "old" && row.gcSurvivalCount === 0) reasons.push("young, never survived a GC");
  return {
    score: round(score, 3),
    ageHours: round(ageHours, 2),
    reason: reasons.length > 0 ? reasons.join(" + ") : `score ${round(score, 2)}`,
  };
}

export interface GcAnalysis {
  taskId: string | null;
  analyzedSegments: number;
  analyzedTokens: number;
  /** Every candidate, highest score first. */
  candidates: PruningCandidate[];
  estimatedTokensFreed: number;
  /** Segments whose survival was recorded by this analysis (0 when it did not advance generations). */
  survivorsAdvanced: number;
  promotedToOld: number;
  /** The working-set rows the analysis scored (for usage metrics). */
  rows: GcRow[];
}

export interface GcAnalysisRequest {
  project: string;
  taskId: string | null;
  /** Segment ids the platform says are in its context now: never candidates. */
  rootIds?: ReadonlySet<string>;
  /** File paths open in the platform (current_file): their segments are roots too. */
  rootFiles?: ReadonlySet<string>;
  /** Record survivals and promote generations (context_gc_analyze); usage analysis only looks. */
  advanceGenerations: boolean;
  now?: number;
}

export async function analyzeGarbage(scope: TenantScope, request: GcAnalysisRequest): Promise<GcAnalysis> {
  const now = request.now ?? Date.now();
  const rows = await readWorkingSetForGc(scope, request.project, request.taskId);
  const candidates: PruningCandidate[] = [];
  const survivors: GcRow[] = [];
  for (const row of rows) {
    const rooted =
      row.pinned || request.rootIds?.has(row.id) || (row.filePath !== null && request.rootFiles?.has(row.filePath));
    const scored = scoreSegment(row, now);
    if (!rooted && scored.score >= GC_POLICY.candidateMinScore) {
      candidates.push({
        segmentId: row.id,
        score: scored.score,
        tokens: row.tokens,
        reason: scored.reason,
        segmentType: row.type,
        ageHours: scored.ageHours,
      });
    } else {
      survivors.push(row);
    }
  }
  candidates.sort((a, b) => b.score - a.score || b.tokens - a.tokens || (a.segmentId < b.segmentId ? -1 : 1));
  const promotedToOld = survivors.filter(
    (r) => r.generation !== "old" && r.gcSurvivalCount + 1 >= GC_POLICY.oldAfterSurvivals,
  ).length;
  if (request.advanceGenerations && survivors.length > 0)
    await recordSurvivals(
      scope,
      survivors.map((r) => r.id),
    );
  return {
    taskId: request.taskId,
    analyzedSegments: rows.length,
    analyzedTokens: sum(rows.map((r) => r.tokens)),
    candidates,
    estimatedTokensFreed: sum(candidates.map((c) => c.tokens)),
    survivorsAdvanced: request.advanceGenerations ? survivors.length : 0,
    promotedToOld: request.advanceGenerations ? promotedToOld : 0,
    rows,
  };
}

/** One batch: survivals + 1, young -> old once a segment has survived OLD_AFTER_SURVIVALS analyses. */
async function recordSurvivals(scope: TenantScope, ids: string[]): Promise<void> {
  const statement = scope.d1.prepare(
    `UPDATE items SET gc_survival_count = gc_survival_count + 1,
       generation = CASE WHEN gc_survival_count + 1 >= ? THEN 'old' ELSE generation END
     WHERE +tenant_id = ? AND id IN (SELECT value FROM json_each(?))`,
  );
  await scope.d1.batch(
    slices(ids).map((slice) => statement.bind(GC_POLICY.oldAfterSurvivals, scope.tenantId, JSON.stringify(slice))),
  );
}

export interface PruningPlan {
  candidates: PruningCandidate[];
  totalTokensFreed: number;
  stashSegments: string[];
  deleteSegments: string[];
  reason: string;
}

/**
 * Highest-scoring candidates first until target_tokens are freed (at most maxPlanSegments). The plan
 * stashes, never deletes: stashing frees the working set and loses nothing; deleting is the caller's call.
 */
export function planPruning(candidates: PruningCandidate[], targetTokens: number): PruningPlan {
  const chosen: PruningCandidate[] = [];
  let freed = 0;
  for (const candidate of candidates) {
    if (freed >= targetTokens || chosen.length >= GC_POLICY.maxPlanSegments) break;
    chosen.push(candidate);
    freed += candidate.tokens;
  }
  let reason: string;
  if (chosen.length === 0)
    reason = "No pruning candidates: nothing to free without touching pinned, referenced or recently used segments";
  else if (freed >= targetTokens)
    reason = `Plan to free ${freed} tokens (target ${targetTokens}) by stashing ${chosen.length} segment(s), highest GC score first`;
  else if (chosen.length >= GC_POLICY.maxPlanSegments)
    reason = `Partial plan: stashing ${chosen.length} segment(s) (the most one plan holds) frees ${freed} of the ${targetTokens} target tokens; analyze again after pruning`;
  else
    reason = `Partial plan: stashing all ${chosen.length} candidate(s) frees ${freed} of the ${targetTokens} target tokens`;
  return {
    candidates: chosen,
    totalTokensFreed: freed,
    stashSegments: chosen.map((c) => c.segmentId),
    deleteSegments: [],
    reason,
  };
}

export interface PinOutcome {
  segmentIds: string[];
  errors: SegmentError[];
}

/** Pins or unpins segments of a project (idempotent). Unknown ids are per-segment SEGMENT_NOT_FOUND errors. */
export async function setPinned(
  scope: TenantScope,
  project: string,
  ids: string[],
  pinned: boolean,
): Promise<PinOutcome> {
  const keys = await readSegmentKeys(scope, project, ids);
  const unique = [...new Set(ids)];
  const found = unique.filter((id) => keys.has(id));
  const errors = unique.filter((id) => !keys.has(id)).map((id) => segmentNotFound(id, project));
  if (found.length > 0) {
    // Pinning changes no search or context result, so no cache generation bump.
    const statement = scope.d1.prepare(
      "UPDATE items SET pinned = ? WHERE +tenant_id = ? AND +project = ? AND id IN (SELECT value FROM json_each(?))",
    );
    await scope.d1.batch(
      slices(found).map((slice) => statement.bind(pinned ? 1 : 0, scope.tenantId, project, JSON.stringify(slice))),
    );
  }
  return { segmentIds: found, errors };
}

export interface PruneOutcome {
  prunedSegments: string[];
  tokensFreed: number;
  errors: SegmentError[];
}

/**
 * Stashes or deletes the given segments of a project. Pinned segments are refused (PERMISSION_DENIED),
 * unknown ids are SEGMENT_NOT_FOUND, stashing an already stashed segment is INVALID_PARAMETER; each
 * as a per-segment error while the rest are pruned. Deleting a stashed segment is allowed.
 */
export async function pruneSegments(
  scope: TenantScope,
  services: Services,
  project: string,
  ids: string[],
  action: "stash" | "delete",
): Promise<PruneOutcome> {
  const keys = await readSegmentKeys(scope, project, ids);
  const errors: SegmentError[] = [];
  const allowed: SegmentKey[] = [];
  for (const id of new Set(ids)) {
    const key = keys.get(id);
    if (!key) errors.push(segmentNotFound(id, project));
    else if (key.pinned) errors.push(segmentPinned(id, action === "stash" ? "stashed" : "deleted"));
    else if (action === "stash" && key.tier === "stashed")
      errors.push({ segment_id: id, code: "INVALID_PARAMETER", message: `Segment '${id}' is already stashed` });
    else allowed.push(key);
  }
  if (action === "stash") {
    const stashed = await stashItems(scope, allowed);
    const moved = new Set(stashed.ids);
    return {
      prunedSegments: allowed.filter((k) => moved.has(k.id)).map((k) => k.id),
      tokensFreed: stashed.tokens,
      errors,
    };
  }
  const deleted = await deleteItems(scope, services, allowed);
  // Tokens freed from the working set: a stashed segment was no longer in it.
  return {
    prunedSegments: deleted.map((k) => k.id),
    tokensFreed: sum(deleted.filter((k) => k.tier === "active").map((k) => k.tokens)),
    errors,
  };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
