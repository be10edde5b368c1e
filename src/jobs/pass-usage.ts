import { addUnits, type BillableUnits, noUnits, UnitMeter } from "../billable-units";
import { addHourRows, type HourEntry, hourRows } from "../core/tenants/usage-hours";
import { meteredD1 } from "../db/metered-d1";
import { FREE_PLAN_DAILY } from "../price-list";
import { addTally, type StatementTally } from "./statement-tally";

/** The tenant id under which usage_hours keeps a shard's own work (scheduled passes); no tenant has it. */
export const SHARD_WORK = "";
/** The job name of the scheduled passes' row: every pass of an hour on a shard is summed into one row. */
export const PASSES_JOB = "scheduled_passes";

const HOUR = 3_600_000;
const hourOf = (at: number) => Math.floor(at / HOUR) * HOUR;

/** One cron invocation on one shard: when it ran, what it cost, and what each of its passes and statements cost. */
export interface PassInvocation {
  at: number;
  failed: boolean;
  units: BillableUnits;
  passes: Map<string, { read: number; written: number }>;
  statements: StatementTally;
}

/** What an hour's invocations on a shard cost, pass by pass and statement by statement: logged once the hour is over. */
interface HourLog {
  invocations: number;
  read: number;
  written: number;
  passes: Map<string, { read: number; written: number }>;
  statements: StatementTally;
}

interface ShardState {
  /** Invocations not yet in usage_hours. */
  unrecorded: HourEntry[];
  /** What writing the last record cost: it goes with the next invocation's units. */
  carry: BillableUnits;
  logs: Map<number, HourLog>;
}

/**
 * What this isolate's scheduled passes cost and has not recorded yet, by shard. A pass that reads but writes nothing
 * (an idle shard's every pass) would double its own cost if each recorded itself, so its units wait here and go to
 * usage_hours with the next invocation on the shard that writes anyway, or at the first invocation of a later hour:
 * recording costs at most one row a shard and hour at rest. Eviction of the isolate loses what waits here: at most the
 * read-only invocations of the current hour and the one before it (up to ~60 minute passes and 4 sweeps).
 */
const shards = new Map<string, ShardState>();

/**
 * Adds an invocation on `shard` and records in its usage_hours what is due: everything, if this invocation wrote rows
 * (the record then rides on a shard that is being written anyway), else only the invocations of earlier hours. The
 * hours that are over are logged, pass by pass and with their costliest statements. A failed record stays here for the
 * next invocation.
 */
export async function recordInvocation(d1: D1Database, shard: string, invocation: PassInvocation): Promise<void> {
  const state: ShardState = shards.get(shard) ?? { unrecorded: [], carry: noUnits(), logs: new Map() };
  shards.set(shard, state);
  const units = addUnits(addUnits(noUnits(), invocation.units), state.carry);
  state.carry = noUnits();
  state.unrecorded.push({
    tenantId: SHARD_WORK,
    at: invocation.at,
    source: "job",
    name: PASSES_JOB,
    project: null,
    failed: invocation.failed,
    units,
  });
  logInvocation(state, invocation);
  const hour = hourOf(invocation.at);
  for (const [past, log] of state.logs)
    if (past < hour) {
      console.log(hourLogLine(shard, past, log));
      state.logs.delete(past);
    }
  const due =
    invocation.units.d1RowsWritten > 0 ? state.unrecorded : state.unrecorded.filter((e) => hourOf(e.at) < hour);
  if (due.length === 0) return;
  const meter = new UnitMeter();
  try {
    await addHourRows(meteredD1(d1, meter), hourRows(due)).run();
    state.unrecorded = state.unrecorded.filter((e) => !due.includes(e));
  } catch (error) {
    console.error(`recording what the scheduled passes cost on ${shard} failed; the next invocation retries`, error);
  } finally {
    state.carry = addUnits(state.carry, meter.current);
  }
}

/**
 * Units of `shard`'s passes that arrive after their invocation (its CPU time, from the trace: cpu-time.ts): they go with
 * the next invocation's record, which is written when due anyway, so they cost no write of their own.
 */
export function carryToNextPass(shard: string, units: Partial<BillableUnits>): void {
  const state: ShardState = shards.get(shard) ?? { unrecorded: [], carry: noUnits(), logs: new Map() };
  shards.set(shard, state);
  state.carry = addUnits(state.carry, units);
}

function logInvocation(state: ShardState, invocation: PassInvocation): void {
  const hour = hourOf(invocation.at);
  const log = state.logs.get(hour) ?? { invocations: 0, read: 0, written: 0, passes: new Map(), statements: new Map() };
  state.logs.set(hour, log);
  log.invocations++;
  log.read += invocation.units.d1RowsRead;
  log.written += invocation.units.d1RowsWritten;
  for (const [name, cost] of invocation.passes) {
    const sum = log.passes.get(name) ?? { read: 0, written: 0 };
    sum.read += cost.read;
    sum.written += cost.written;
    log.passes.set(name, sum);
  }
  addTally(log.statements, invocation.statements);
}

/** Statements named in an hour's log line, costliest first. */
const LOGGED_STATEMENTS = 5;
/** A row written weighs as many rows read as the Free plan's daily allowances say (50). */
const WRITE_WEIGHT = FREE_PLAN_DAILY.d1RowsRead / FREE_PLAN_DAILY.d1RowsWritten;
const weight = (cost: { read: number; written: number }) => cost.read + WRITE_WEIGHT * cost.written;

/**
 * One line for an hour of a shard's passes (Workers Logs in production; the cost bench reads it for the idle hour):
 * JSON after a fixed prefix, so it can be found and parsed.
 */
export function hourLogLine(shard: string, hour: number, log: HourLog): string {
  const statements = [...log.statements]
    .sort((a, b) => weight(b[1]) - weight(a[1]))
    .slice(0, LOGGED_STATEMENTS)
    .map(([sql, cost]) => ({ sql: sql.slice(0, 300), ...cost }));
  return `${PASS_HOUR_LOG} ${JSON.stringify({
    shard,
    hour: new Date(hour).toISOString(),
    invocations: log.invocations,
    read: log.read,
    written: log.written,
    passes: Object.fromEntries(log.passes),
    statements,
  })}`;
}

/** The prefix of an hour's log line. */
export const PASS_HOUR_LOG = "scheduled passes, an hour:";
