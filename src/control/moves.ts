import { forgetBlocksStatements } from "../core/keyword-index/block-build";
import { usageOf, usageStatement } from "../core/tenants/quotas";
import { QueryPieces } from "../db/invocation-queries";
import { AppError, invalidParameter, isQueryBudgetExceeded, MoveOvertaken, notFound } from "../errors";
import {
  appendPage,
  countRows,
  diffPage,
  emptyTally,
  type PassCursor,
  purgePage,
  sameTally,
  TALLY_START,
  type Tally,
  type TallyCursor,
  tallyAppendOnlyPage,
  tallyHex,
} from "./move-copy";
import { isActive, type MoveRow, type MoveState, type MoveView, moveView, readMove } from "./move-records";
import { forgetRoutes, ROUTE_TTL_MS } from "./routing";
import { isShardName, type ShardBindings, shardDatabase, shardNames } from "./shards";
import { TENANT_TABLES_TO_MOVE as TABLES } from "./tenant-tables";

/**
 * Moving a tenant between shards, as a resumable state machine whose state lives in the control database
 * (tenant_moves), so any runner (the queue job, the cron sweep) picks it up where the last one stopped:
 *
 * 1. copying: every table is copied page by page while the tenant keeps reading and writing on the source.
 * 2. switching: the source freezes the tenant's writes (tenant_fences; a refused write is a retryable error),
 *    a second pass makes the target exactly equal, counting rows and checksumming every table on both sides;
 *    when they agree, one control batch points the tenant at the target. Reads work throughout.
 * 3. purging: once no isolate can still route to the source (ROUTE_TTL_MS and a grace after the switch), the
 *    source's rows are deleted; then the fence is lifted: done.
 *
 * Vectors stay where they are (Vectorize namespaces are per tenant, not per shard; the local index's rows move
 * with the tenant), and so do KV cache entries and their D1 records, which are copied.
 */
/** Time after the switch before the source's rows are deleted: every isolate's routing cache has expired by then. */
export const PURGE_AFTER_MS = ROUTE_TTL_MS + 5_000;
/** Second passes a move tries before it gives up (a pass that does not verify is repeated: writes may have raced the fence). */
const MAX_VERIFY_PASSES = 3;

interface Progress extends PassCursor {
  /** Second passes so far. */
  pass: number;
  tallies: Record<string, { source: Tally; target: Tally }>;
  /** In a second pass, once an append-only table has caught up: how far each side's tally has got (page by page). */
  tallying?: { source: TallyCursor; target: TallyCursor };
}

/**
 * Starts a move: 400 for a shard the deployment does not bind, 404 for no such tenant, 409 for a tenant being
 * deleted, already moving, already on that shard, or with project deletions still running.
 */
export async function beginMove(
  env: ShardBindings & { CONTROL: D1Database },
  tenantId: string,
  target: unknown,
  now = Date.now(),
): Promise<MoveView> {
  if (typeof target !== "string" || !isShardName(env, target)) {
    throw invalidParameter(
      "shard",
      `shard must name one of this deployment's data shards: ${shardNames(env).join(", ")} (got ${JSON.stringify(target)?.slice(0, 80)})`,
    );
  }
  const tenant = await env.CONTROL.prepare("SELECT shard, deleting_at FROM tenants WHERE id = ?")
    .bind(tenantId)
    .first<{ shard: string; deleting_at: number | null }>();
  if (!tenant) throw notFound(`Tenant '${tenantId}' does not exist`, { tenant_id: tenantId });
  if (tenant.deleting_at !== null)
    throw new AppError("CONFLICT", `Tenant '${tenantId}' is being deleted`, { tenant_id: tenantId });
  if (tenant.shard === target)
    throw new AppError("CONFLICT", `Tenant '${tenantId}' is already on ${target}`, {
      tenant_id: tenantId,
      shard: target,
    });
  const source = shardDatabase(env, tenant.shard);
  if (await source.prepare("SELECT 1 FROM project_deletions WHERE tenant_id = ? LIMIT 1").bind(tenantId).first()) {
    throw new AppError(
      "CONFLICT",
      `Tenant '${tenantId}' has a project deletion running; move it once that has finished`,
      { tenant_id: tenantId },
    );
  }
  const counts = await Promise.all(TABLES.map((t) => countRows(source, t, tenantId)));
  const progress: Progress = { table: 0, after: null, pass: 0, tallies: {} };
  const started = await env.CONTROL.prepare(
    `INSERT INTO tenant_moves (tenant_id, source, target, state, progress, copied, total, verified, error, step, started_at, updated_at, switched_at, finished_at)
     VALUES (?1, ?2, ?3, 'copying', ?4, 0, ?5, NULL, NULL, 0, ?6, ?6, NULL, NULL)
     ON CONFLICT (tenant_id) DO UPDATE SET source = ?2, target = ?3, state = 'copying', progress = ?4, copied = 0, total = ?5, verified = NULL, error = NULL,
       step = 0, started_at = ?6, updated_at = ?6, switched_at = NULL, finished_at = NULL
     WHERE tenant_moves.state IN ('done', 'failed')
     RETURNING tenant_id`,
  )
    .bind(
      tenantId,
      tenant.shard,
      target,
      JSON.stringify(progress),
      counts.reduce((a, b) => a + b, 0),
      now,
    )
    .first();
  if (!started) throw new AppError("CONFLICT", `Tenant '${tenantId}' is already moving`, { tenant_id: tenantId });
  // The target holds none of the tenant's rows unless an earlier move there failed. Keyed tables heal in the
  // copy's diff; append-only ones are copied after the rows the target holds, so leftovers go first.
  const destination = shardDatabase(env, target);
  for (const table of TABLES.filter((t) => t.appendOnly))
    await destination.prepare(`DELETE FROM ${table.name} WHERE tenant_id = ?`).bind(tenantId).run();
  return moveView((await readMove(env.CONTROL, tenantId))!);
}

export interface MoveRun {
  state: MoveState;
  /** When the next step may run (purging waits for routing caches to expire); 0 = now. */
  waitMs: number;
}

/**
 * Runs up to `maxPages` pages of a tenant's move and saves where it stopped. Two runners of one move cannot
 * both advance it: each save names the step it read, and the loser stops.
 */
export async function runMove(
  env: ShardBindings & { CONTROL: D1Database },
  tenantId: string,
  maxPages: number,
  now = () => Date.now(),
): Promise<MoveRun> {
  let row = await readMove(env.CONTROL, tenantId);
  if (!row || !isActive(row.state)) return { state: row?.state ?? "done", waitMs: 0 };
  const source = shardDatabase(env, row.source);
  const target = shardDatabase(env, row.target);
  const progress = JSON.parse(row.progress) as Progress;
  let copied = row.copied;
  const save = async (
    changes: { state?: MoveState; verified?: string; error?: string; switchedAt?: number; finishedAt?: number } = {},
  ) => {
    const saved = await env.CONTROL.prepare(
      `UPDATE tenant_moves SET progress = ?1, copied = ?2, total = MAX(total, ?2), state = COALESCE(?3, state), verified = COALESCE(?4, verified), error = COALESCE(?5, error),
         switched_at = COALESCE(?6, switched_at), finished_at = COALESCE(?7, finished_at), step = step + 1, updated_at = ?8
       WHERE tenant_id = ?9 AND step = ?10 RETURNING *`,
    )
      .bind(
        JSON.stringify(progress),
        copied,
        changes.state ?? null,
        changes.verified ?? null,
        changes.error ?? null,
        changes.switchedAt ?? null,
        changes.finishedAt ?? null,
        now(),
        tenantId,
        row!.step,
      )
      .first<MoveRow>();
    if (!saved) throw new MoveOvertaken();
    row = saved;
  };

  // D1's queries per invocation: a page is started only while the budget covers one as large as the largest
  // so far; a page the budget cuts off was not saved (pages are idempotent), and the next runner does it again.
  const pieces = new QueryPieces(PAGE_QUERIES);
  let pages = 0;
  try {
    for (; pages < maxPages; pages++) {
      if (pages > 0 && !pieces.fits()) break;
      pieces.start();
      try {
        if (row.state === "copying" || row.state === "switching") {
          const table = TABLES[progress.table];
          if (!table) {
            if (row.state === "copying") {
              await fence(source, tenantId, "frozen", now());
              Object.assign(progress, { table: 0, after: null, pass: 1, tallies: {}, tallying: undefined });
              await save({ state: "switching" });
            } else await finishPass(env, row, progress, save, now);
            continue;
          }
          const verifying = row.state === "switching";
          const tallies = verifying
            ? (progress.tallies[table.name] ??= { source: emptyTally(), target: emptyTally() })
            : undefined;
          if (table.appendOnly && tallies && progress.tallying) {
            // Verifying an append-only table a page of each side at a time (a long usage log spans many jobs).
            const [sourceCursor, targetCursor] = await Promise.all([
              tallyAppendOnlyPage(source, table, tenantId, tallies.source, progress.tallying.source),
              tallyAppendOnlyPage(target, table, tenantId, tallies.target, progress.tallying.target),
            ]);
            const tallying = { source: sourceCursor, target: targetCursor };
            if (tallying.source.done && tallying.target.done)
              Object.assign(progress, { table: progress.table + 1, after: null, tallying: undefined });
            else progress.tallying = tallying;
          } else if (table.appendOnly) {
            const page = await appendPage(source, target, table, tenantId);
            if (!verifying) copied += page.rows;
            if (page.done) {
              if (tallies) progress.tallying = { source: TALLY_START, target: TALLY_START };
              else Object.assign(progress, { table: progress.table + 1, after: null });
            }
          } else {
            // A cursor saved under another shape of the table's key (a move begun before it changed) starts the table over.
            const after = progress.after?.length === table.key.length ? progress.after : null;
            const page = await diffPage(source, target, table, tenantId, after, tallies);
            if (!verifying) copied += page.rows;
            Object.assign(
              progress,
              page.next === null ? { table: progress.table + 1, after: null } : { after: page.next },
            );
          }
          await save();
        } else if (row.state === "purging") {
          const waitMs = row.switched_at! + PURGE_AFTER_MS - now();
          if (waitMs > 0) return { state: row.state, waitMs };
          await fence(source, tenantId, "purging", now());
          const table = await firstWithRows(source, tenantId);
          if (table) {
            await purgePage(source, table, tenantId);
            await save();
          } else {
            // The usage row the triggers brought to zeros goes with the fence, and so do the posting blocks (not moved).
            await source.batch([
              ...forgetBlocksStatements(source, tenantId),
              source.prepare("DELETE FROM tenant_usage WHERE tenant_id = ?").bind(tenantId),
              source.prepare("DELETE FROM tenant_fences WHERE tenant_id = ?").bind(tenantId),
            ]);
            await save({ state: "done", finishedAt: now() });
            return { state: "done", waitMs: 0 };
          }
        } else return { state: row.state, waitMs: 0 };
      } finally {
        pieces.finish();
      }
    }
  } catch (error) {
    if (error instanceof MoveOvertaken) return { state: row.state, waitMs: 0 };
    if (isQueryBudgetExceeded(error) && pages > 0) return { state: row.state, waitMs: 0 };
    throw error;
  }
  return { state: row.state, waitMs: 0 };
}

/** D1 queries a move page takes at least: two reads, a write batch, the save (QueryPieces learns larger ones). */
const PAGE_QUERIES = 5;

/** The end of a second pass: switch when every table agrees on both sides, else run the pass again. */
async function finishPass(
  env: ShardBindings & { CONTROL: D1Database },
  row: MoveRow,
  progress: Progress,
  save: (changes?: { state?: MoveState; verified?: string; error?: string; switchedAt?: number }) => Promise<void>,
  now: () => number,
): Promise<void> {
  const verified = Object.fromEntries(
    TABLES.map((t) => {
      const tally = progress.tallies[t.name] ?? { source: emptyTally(), target: emptyTally() };
      return [
        t.name,
        {
          rows: tally.source.rows,
          target_rows: tally.target.rows,
          source: tallyHex(tally.source),
          target: tallyHex(tally.target),
          same: sameTally(tally.source, tally.target),
        },
      ];
    }),
  );
  const differing = Object.entries(verified)
    .filter(([, v]) => !v.same)
    .map(([name]) => name);
  if (differing.length > 0) {
    if (progress.pass >= MAX_VERIFY_PASSES) {
      await shardDatabase(env, row.source)
        .prepare("DELETE FROM tenant_fences WHERE tenant_id = ?")
        .bind(row.tenant_id)
        .run();
      await save({
        state: "failed",
        error: `verification failed after ${progress.pass} passes: ${differing.join(", ")} differ`,
        verified: JSON.stringify(verified),
      });
      return;
    }
    Object.assign(progress, { table: 0, after: null, pass: progress.pass + 1, tallies: {}, tallying: undefined });
    await save();
    return;
  }
  const shown = Object.fromEntries(
    Object.entries(verified).map(([name, v]) => [name, { rows: v.rows, source: v.source, target: v.target }]),
  );
  await copyUsage(shardDatabase(env, row.source), shardDatabase(env, row.target), row.tenant_id);
  const switchedAt = now();
  // The switch: the map points at the target only if it still points at the source.
  const switched = await env.CONTROL.prepare(
    "UPDATE tenants SET shard = ? WHERE id = ? AND shard = ? AND deleting_at IS NULL",
  )
    .bind(row.target, row.tenant_id, row.source)
    .run();
  if (switched.meta.changes !== 1) {
    await shardDatabase(env, row.source)
      .prepare("DELETE FROM tenant_fences WHERE tenant_id = ?")
      .bind(row.tenant_id)
      .run();
    await save({
      state: "failed",
      error: "the tenant's row changed during the move (deleted, or placed elsewhere); nothing was switched",
    });
    return;
  }
  forgetRoutes({ tenantId: row.tenant_id });
  await save({ state: "purging", verified: JSON.stringify(shown), switchedAt });
}

/**
 * The tenant's usage row (tenant_usage, kept by triggers on items) as the frozen source has it, written on the
 * target before the switch. The copy's own inserts moved the target's row too, but not exactly: a page's
 * INSERT OR REPLACE of a row the target held already counts it again (SQLite runs no delete trigger for a
 * replaced row), so the row is set rather than trusted. The source's items equal the target's now (verified).
 */
async function copyUsage(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  const usage = usageOf(await usageStatement(source, tenantId).all());
  // Posting blocks the target's minute pass built while the rows were being copied may miss some: they go, and
  // the pass builds the tenant anew from its rows as they are now.
  await target.batch([
    target
      .prepare(
        `INSERT INTO tenant_usage (tenant_id, items, bytes, pending_jobs) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (tenant_id) DO UPDATE SET items = ?2, bytes = ?3, pending_jobs = ?4`,
      )
      .bind(tenantId, usage.items, usage.bytes, usage.pendingJobs),
    ...forgetBlocksStatements(target, tenantId),
  ]);
}

async function fence(db: D1Database, tenantId: string, state: "frozen" | "purging", now: number): Promise<void> {
  await db
    .prepare(
      "INSERT INTO tenant_fences (tenant_id, state, since) VALUES (?, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET state = excluded.state WHERE state <> excluded.state",
    )
    .bind(tenantId, state, now)
    .run();
}

/** The first table (in reverse order, so items go last) that still holds rows of the tenant. */
async function firstWithRows(db: D1Database, tenantId: string) {
  const counts = await db.batch<{ n: number }>(
    [...TABLES]
      .reverse()
      .map((t) => db.prepare(`SELECT EXISTS (SELECT 1 FROM ${t.name} WHERE tenant_id = ?) AS n`).bind(tenantId)),
  );
  const index = counts.findIndex((r) => r.results[0]!.n === 1);
  return index < 0 ? undefined : [...TABLES].reverse()[index];
}
