import { AsyncLocalStorage } from "node:async_hooks";
import { QueryBudgetExceeded } from "../errors";

/**
 * D1's queries per Worker invocation: 1,000 on Workers Paid, 50 on Free (D1_QUERIES_PER_INVOCATION chooses).
 * Each handler runs in a budget (src/index.ts); every statement a checked D1 binding runs counts one, a
 * statement inside a batch included (the stricter reading of the limit), and the one past the budget is
 * refused as the platform refuses it. Work after the response (waitUntil) belongs to the same invocation.
 *
 * Work that can be split follows the budget instead of meeting the refusal: a JSON-RPC batch answers the
 * calls it has no queries left for with a retryable error (src/mcp/dispatch.ts), and jobs run their pages,
 * steps or groups while `remainingQueries()` covers one more and queue the rest (docs/limits.md).
 */
export const DEFAULT_QUERIES_PER_INVOCATION = 1000;

interface Budget {
  limit: number;
  used: number;
  /** Tool calls started in the invocation (src/mcp/dispatch.ts). */
  toolCalls: number;
}

const budgets = new AsyncLocalStorage<Budget>();

export function withQueryBudget<T>(limit: number, run: () => T): T {
  return budgets.run({ limit, used: 0, toolCalls: 0 }, run);
}

/**
 * Spends `count` queries of the current invocation's budget; the error when that would exceed it (outside a
 * handler, none). A refused statement or batch is not run, and it spends what was left: the platform's
 * counter does not go back, so every later query of the invocation is refused too (the stricter reading).
 * Work that can be split checks `remainingQueries()` before it starts a piece rather than meeting this.
 */
export function spendQueries(count: number): QueryBudgetExceeded | null {
  const budget = budgets.getStore();
  if (!budget) return null;
  if (budget.used + count > budget.limit) {
    budget.used = budget.limit;
    return new QueryBudgetExceeded(budget.limit);
  }
  budget.used += count;
  return null;
}

/** Queries the current invocation may still run (Infinity outside a handler's budget; 0 once one was refused). */
export function remainingQueries(): number {
  const budget = budgets.getStore();
  return budget ? budget.limit - budget.used : Infinity;
}

/** The current invocation's budget (null outside a handler). */
export function queryBudget(): { limit: number; used: number } | null {
  const budget = budgets.getStore();
  return budget ? { limit: budget.limit, used: budget.used } : null;
}

/**
 * Counts a tool call the invocation starts; true for its first. A first call that the budget refuses needs
 * more than any request has, so retrying it cannot help; a later one fits in a request of its own.
 */
export function startToolCall(): boolean {
  const budget = budgets.getStore();
  if (!budget) return true;
  return budget.toolCalls++ === 0;
}

/** Tool calls the invocation has started (0 outside a handler's budget). */
export function toolCallsStarted(): number {
  return budgets.getStore()?.toolCalls ?? 0;
}

/**
 * Work in idempotent pieces (a move's pages, a deletion's steps) sized by the invocation's budget: `fits()`
 * says whether the queries left cover one more piece as large as the largest so far (at least `floor`);
 * `start()` before each piece and `finish()` after it (in a finally) measure it. The caller stops when the
 * next piece does not fit and queues the rest for a new invocation.
 */
export class QueryPieces {
  private largest: number;
  private before = Infinity;

  constructor(floor: number) {
    this.largest = floor;
  }

  /** Whether the queries left cover one more piece as large as the largest so far, and `reserve` beside. */
  fits(reserve = 0): boolean {
    return remainingQueries() >= this.largest + reserve;
  }

  start(): void {
    this.before = remainingQueries();
  }

  finish(): void {
    if (this.before !== Infinity) this.largest = Math.max(this.largest, this.before - remainingQueries());
  }
}
