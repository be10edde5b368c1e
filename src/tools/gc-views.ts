import { z } from "zod";
import type { PruningCandidate } from "../core/working-set/gc";
import type { Segment } from "../core/working-set/segments";
import { iso } from "./params";

// Seed 004's response shapes for segments, GC candidates and per-segment errors.

export const segmentSchema = z.object({
  segment_id: z.string(),
  text: z.string(),
  type: z.string(),
  kind: z.string(),
  project_id: z.string(),
  task_id: z.string().nullable(),
  created_at: z.string(),
  last_touched_at: z.string(),
  pinned: z.boolean(),
  generation: z.string(),
  gc_survival_count: z.number().int(),
  refcount: z.number().int(),
  file_path: z.string().nullable(),
  line_range: z.array(z.number().int()).length(2).nullable().describe("[first line, last line]"),
  tags: z.array(z.string()),
  topic_id: z.null(),
  tokens: z.number().int(),
  tokens_computed_at: z.string(),
  text_hash: z.string(),
  tier: z.enum(["working", "stashed"]),
});

export function segmentView(s: Segment): z.infer<typeof segmentSchema> {
  return {
    segment_id: s.id,
    text: s.content,
    type: s.type,
    kind: s.kind,
    project_id: s.project,
    task_id: s.taskId,
    created_at: iso(s.createdAt),
    last_touched_at: iso(s.touchedAt),
    pinned: s.pinned,
    generation: s.generation,
    gc_survival_count: s.gcSurvivalCount,
    refcount: s.refcount,
    file_path: s.filePath,
    line_range: s.lineStart !== null ? [s.lineStart, s.lineEnd ?? s.lineStart] : null,
    tags: s.tags,
    topic_id: null,
    tokens: s.tokens,
    tokens_computed_at: iso(s.createdAt),
    text_hash: s.contentHash,
    tier: s.tier === "stashed" ? "stashed" : "working",
  };
}

export const candidateSchema = z.object({
  segment_id: z.string(),
  score: z.number(),
  tokens: z.number().int(),
  reason: z.string(),
  segment_type: z.string(),
  age_hours: z.number(),
});

export function candidateView(c: PruningCandidate): z.infer<typeof candidateSchema> {
  return {
    segment_id: c.segmentId,
    score: c.score,
    tokens: c.tokens,
    reason: c.reason,
    segment_type: c.segmentType,
    age_hours: c.ageHours,
  };
}

export const segmentErrorSchema = z.object({ segment_id: z.string(), code: z.string(), message: z.string() });
