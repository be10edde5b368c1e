// Cloudflare's price list for what this worker spends, as published on developers.cloudflare.com (the pricing pages of
// D1, KV, Queues, Workers AI and Workers, last updated 2026-04-21 to 2026-08-28; read 2026-11-27). docs/costs.md
// carries the table with its sources; change both together.

/**
 * The Workers Free plan's daily allowances (all reset at 00:00 UTC); past one, that operation fails until then. They
 * are the Cloudflare account's, shared by every Worker, D1 database, KV namespace and queue in it: a deployment's
 * tenants, scheduled passes and control database all spend from the same ones.
 */
export const FREE_PLAN_DAILY = {
  d1RowsRead: 5_000_000,
  d1RowsWritten: 100_000,
  kvReads: 100_000,
  kvWrites: 1_000,
  kvDeletes: 1_000,
  kvLists: 1_000,
  /** A message's write, read and delete, each per 64 KB of it; a retry reads it again. */
  queueOperations: 10_000,
  aiNeurons: 10_000,
  workerRequests: 100_000,
} as const;

/** The Free plan's CPU limit is per invocation, not a daily allowance: an invocation past it fails. */
export const FREE_PLAN_CPU_MS_PER_INVOCATION = 10;

/** Workers Paid (Standard usage model): what a month (or, for neurons, a day) includes, and $ per million units past it. */
export const PAID_PLAN = {
  monthlyBaseUsd: 5,
  d1RowsRead: { includedPerMonth: 25_000_000_000, usdPerMillion: 0.001 },
  d1RowsWritten: { includedPerMonth: 50_000_000, usdPerMillion: 1.0 },
  kvReads: { includedPerMonth: 10_000_000, usdPerMillion: 0.5 },
  kvWrites: { includedPerMonth: 1_000_000, usdPerMillion: 5.0 },
  kvDeletes: { includedPerMonth: 1_000_000, usdPerMillion: 5.0 },
  kvLists: { includedPerMonth: 1_000_000, usdPerMillion: 5.0 },
  queueOperations: { includedPerMonth: 1_000_000, usdPerMillion: 0.4 },
  /** $0.011 per 1,000 neurons past 10,000 a day: the Free plan's daily allocation, on Paid too. */
  aiNeurons: { includedPerDay: 10_000, usdPerMillion: 11 },
  workerRequests: { includedPerMonth: 10_000_000, usdPerMillion: 0.3 },
  /** CPU milliseconds of every invocation (requests, queue batches, crons), from the platform's traces (jobs/cpu-time.ts). */
  workerCpuMs: { includedPerMonth: 30_000_000, usdPerMillion: 0.02 },
} as const;

/**
 * R2 (documents' originals): its free tier is a month's, on both plans, then $ per million operations and per GB-month
 * stored. Deletes are free.
 */
export const R2_PRICES = {
  classA: { freePerMonth: 1_000_000, usdPerMillion: 4.5 },
  classB: { freePerMonth: 10_000_000, usdPerMillion: 0.36 },
  storage: { freeGbMonth: 10, usdPerGbMonth: 0.015 },
} as const;

/** Queue operations a message costs: written, read and deleted (one each per 64 KB; a retry reads it again). */
export const QUEUE_OPERATIONS_PER_MESSAGE = 3;
