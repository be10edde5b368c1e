import type { TenantScope } from "../../db/scope";
import { bumpCacheGenerations } from "../context/cache-generation";
import { type SegmentFilter, type SegmentSelection, selectSegmentBriefs, selectSegments } from "./segment-filters";
import { type Segment, type SegmentError, segmentPinned, slices } from "./segments";

/**
 * The stash: segments moved out of the working set (tier 'stashed'). Search, context building and the
 * working set leave them out; nothing is deleted, and retrieval moves them back. Stash and unstash
 * invalidate cached contexts of the projects they touch in the same D1 batch.
 */

/** Moves active, unpinned segments to the stash; returns those it moved (the update re-checks both). */
export async function stashItems(
  scope: TenantScope,
  segments: readonly { id: string; project: string }[],
): Promise<{ ids: string[]; tokens: number }> {
  if (segments.length === 0) return { ids: [], tokens: 0 };
  const statement = scope.d1.prepare(
    "UPDATE items SET tier = 'stashed' WHERE +tenant_id = ? AND tier = 'active' AND pinned = 0 AND id IN (SELECT value FROM json_each(?)) RETURNING id, tokens",
  );
  const updates = slices(segments.map((s) => s.id)).map((slice) =>
    statement.bind(scope.tenantId, JSON.stringify(slice)),
  );
  const results = await scope.d1.batch<{ id: string; tokens: number }>([
    ...updates,
    ...bumpCacheGenerations(scope, new Set(segments.map((s) => s.project))),
  ]);
  return collect(results.slice(0, updates.length));
}

/** Moves stashed segments back into the working set and touches them (they are in use again). */
export async function unstashItems(
  scope: TenantScope,
  segments: readonly { id: string; project: string }[],
  now = Date.now(),
): Promise<{ ids: string[]; tokens: number }> {
  if (segments.length === 0) return { ids: [], tokens: 0 };
  const statement = scope.d1.prepare(
    "UPDATE items SET tier = 'active', touched_at = ? WHERE +tenant_id = ? AND tier = 'stashed' AND kind <> 'snapshot' AND id IN (SELECT value FROM json_each(?)) RETURNING id, tokens",
  );
  const updates = slices(segments.map((s) => s.id)).map((slice) =>
    statement.bind(now, scope.tenantId, JSON.stringify(slice)),
  );
  const results = await scope.d1.batch<{ id: string; tokens: number }>([
    ...updates,
    ...bumpCacheGenerations(scope, new Set(segments.map((s) => s.project))),
  ]);
  return collect(results.slice(0, updates.length));
}

function collect(results: D1Result<{ id: string; tokens: number }>[]): { ids: string[]; tokens: number } {
  const rows = results.flatMap((r) => r.results);
  return { ids: rows.map((r) => r.id), tokens: rows.reduce((s, r) => s + r.tokens, 0) };
}

export interface StashOutcome {
  stashedSegments: string[];
  tokensStashed: number;
  /** Active segments the query and filters matched (pinned ones included). */
  segmentsMatched: number;
  errors: SegmentError[];
}

/** context_stash: every active segment of the project matching the keyword and filters; pinned ones stay. */
export async function stashMatching(
  scope: TenantScope,
  project: string,
  query: string | undefined,
  filter: SegmentFilter,
): Promise<StashOutcome> {
  const matched = await selectSegmentBriefs(scope, {
    projects: [project],
    tiers: ["active"],
    excludeSnapshots: true,
    query,
    filter,
  });
  const movable = matched.filter((s) => !s.pinned);
  const stashed = await stashItems(scope, movable);
  const moved = new Set(stashed.ids);
  // Order as matched (most recently touched first); a segment changed meanwhile is simply not listed.
  return {
    stashedSegments: movable.filter((s) => moved.has(s.id)).map((s) => s.id),
    tokensStashed: stashed.tokens,
    segmentsMatched: matched.length,
    errors: matched.filter((s) => s.pinned).map((s) => segmentPinned(s.id, "stashed")),
  };
}

/** context_search_stashed: stashed segments (snapshot records included, so snapshots can be found). */
export async function searchStashed(
  scope: TenantScope,
  projects: string[] | undefined,
  query: string | undefined,
  filter: SegmentFilter,
  limit: number,
): Promise<{ total: number; segments: Segment[] }> {
  return selectSegments(scope, { projects, tiers: ["stashed"], query, filter }, limit);
}

export interface RetrieveOutcome {
  segmentsFound: number;
  /** The first `limit` matches, as they are after the move. */
  segments: Segment[];
  /** Every match moved back to the working set (only when asked). */
  movedToActive: string[] | null;
}

/**
 * context_retrieve_stashed: stashed segments of a project matching the keyword and filters; with
 * moveToActive, all of them (not just the listed page) return to the working set. Snapshot records
 * are never retrieved themselves: a `snapshot:<id>` tag filter stands for the segments they captured.
 */
export async function retrieveStashed(
  scope: TenantScope,
  project: string,
  query: string | undefined,
  filter: SegmentFilter,
  limit: number,
  moveToActive: boolean,
): Promise<RetrieveOutcome> {
  const selection: SegmentSelection = {
    projects: [project],
    tiers: ["stashed"],
    excludeSnapshots: true,
    query,
    filter,
  };
  const listed = await selectSegments(scope, selection, limit);
  if (!moveToActive) return { segmentsFound: listed.total, segments: listed.segments, movedToActive: null };
  const all = listed.total > listed.segments.length ? await selectSegmentBriefs(scope, selection) : listed.segments;
  const now = Date.now();
  const moved = new Set((await unstashItems(scope, all, now)).ids);
  const segments = listed.segments.map((s) => (moved.has(s.id) ? { ...s, tier: "active", touchedAt: now } : s));
  return { segmentsFound: listed.total, segments, movedToActive: all.map((s) => s.id).filter((id) => moved.has(id)) };
}
