// The tenant_moves table as the rest of the house reads it: a move's state, its view for the admin API, and the
// moves whose runner seems lost.

/** A move's state (moves.ts runs the machine). */
export type MoveState = "copying" | "switching" | "purging" | "done" | "failed";

export interface MoveView {
  state: MoveState;
  source: string;
  target: string;
  copied: number;
  total: number;
  started_at: string;
  switched_at?: string;
  finished_at?: string;
  error?: string;
  /** Per table, once verified: rows and checksum on each side. */
  verified?: Record<string, { rows: number; source: string; target: string }>;
}

export interface MoveRow {
  tenant_id: string;
  source: string;
  target: string;
  state: MoveState;
  progress: string;
  copied: number;
  total: number;
  verified: string | null;
  error: string | null;
  step: number;
  started_at: number;
  switched_at: number | null;
  finished_at: number | null;
}

const iso = (ms: number | null) => (ms === null ? undefined : new Date(ms).toISOString());

export async function readMove(control: D1Database, tenantId: string): Promise<MoveRow | null> {
  return control.prepare("SELECT * FROM tenant_moves WHERE tenant_id = ?").bind(tenantId).first<MoveRow>();
}

export function moveView(row: MoveRow): MoveView {
  return {
    state: row.state,
    source: row.source,
    target: row.target,
    copied: row.copied,
    total: row.total,
    started_at: iso(row.started_at)!,
    ...(row.switched_at === null ? {} : { switched_at: iso(row.switched_at) }),
    ...(row.finished_at === null ? {} : { finished_at: iso(row.finished_at) }),
    ...(row.error === null ? {} : { error: row.error }),
    ...(row.verified === null ? {} : { verified: JSON.parse(row.verified) }),
  };
}

export const isActive = (state: MoveState) => state === "copying" || state === "switching" || state === "purging";

/** Moves whose runner seems lost (no progress saved for a while): the cron sweep resumes them. */
export async function stalledMoves(control: D1Database, before: number): Promise<string[]> {
  const { results } = await control
    .prepare(
      "SELECT tenant_id FROM tenant_moves WHERE state IN ('copying', 'switching', 'purging') AND updated_at < ? LIMIT 100",
    )
    .bind(before)
    .all<{ tenant_id: string }>();
  return results.map((r) => r.tenant_id);
}
