// What an operation's billable units mean on Cloudflare's price list (src/price-list.ts): how many fit in a day of
// the Free plan, naming the allowance that binds, and the dollars a million of them cost on Paid past what it includes.
import { FREE_PLAN_DAILY, PAID_PLAN, QUEUE_OPERATIONS_PER_MESSAGE } from "../../src/price-list.ts";

/** The units of one operation as the bench measures them (usage_hours columns, per operation). */
export const UNIT_COLUMNS = [
  "d1_rows_read",
  "d1_rows_written",
  "kv_reads",
  "kv_writes",
  "kv_deletes",
  "kv_lists",
  "queue_sends",
  "ai_neurons",
  "local_rows_read",
  "local_rows_written",
];

/** The plan's units of an operation: its columns and the Worker requests it took (queue messages cost three operations). */
export function planUnits(units, requests) {
  return {
    d1RowsRead: units.d1_rows_read,
    d1RowsWritten: units.d1_rows_written,
    kvReads: units.kv_reads,
    kvWrites: units.kv_writes,
    kvDeletes: units.kv_deletes,
    kvLists: units.kv_lists,
    queueOperations: units.queue_sends * QUEUE_OPERATIONS_PER_MESSAGE,
    aiNeurons: units.ai_neurons,
    workerRequests: requests,
  };
}

/** Operations a Free plan day holds, and the allowance that runs out first; Infinity when the operation bills nothing. */
export function freePlanCapacity(plan) {
  let best = { perDay: Infinity, binding: null };
  for (const [unit, limit] of Object.entries(FREE_PLAN_DAILY)) {
    const used = plan[unit] ?? 0;
    if (used <= 0) continue;
    const perDay = limit / used;
    if (perDay < best.perDay) best = { perDay, binding: unit };
  }
  return best;
}

/** Dollars a million operations cost on Workers Paid past its included amounts (the $5 a month base aside). */
export function paidUsdPerMillion(plan) {
  return Object.entries(PAID_PLAN)
    .filter(([unit]) => unit !== "monthlyBaseUsd")
    .reduce((usd, [unit, price]) => usd + (plan[unit] ?? 0) * price.usdPerMillion, 0);
}

const LIMIT_NAMES = {
  d1RowsRead: "D1 rows read",
  d1RowsWritten: "D1 rows written",
  kvReads: "KV reads",
  kvWrites: "KV writes",
  kvDeletes: "KV deletes",
  kvLists: "KV lists",
  queueOperations: "queue operations",
  aiNeurons: "Workers AI neurons",
  workerRequests: "Worker requests",
};

export const limitName = (unit) => LIMIT_NAMES[unit] ?? unit;
