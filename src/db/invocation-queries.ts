import { AsyncLocalStorage } from "node:async_hooks";

/**
 * D1's queries per Worker invocation: 1,000 on Workers Paid, 50 on Free (D1_QUERIES_PER_INVOCATION chooses).
 * Each handler runs in a budget (src/index.ts); every statement a checked D1 binding runs counts one, a
 * statement inside a batch included (the stricter reading of the limit), and the one past the budget is
 * refused as the platform refuses it. Work after the response (waitUntil) belongs to the same invocation.
 */
export const DEFAULT_QUERIES_PER_INVOCATION = 1000;

interface Budget {
  limit: number;
  used: number;
}

const budgets = new AsyncLocalStorage<Budget>();

export function withQueryBudget<T>(limit: number, run: () => T): T {
  return budgets.run({ limit, used: 0 }, run);
}

/** Spends `count` queries of the current invocation's budget; the error when that would exceed it (outside a handler, none). */
export function spendQueries(count: number): Error | null {
  const budget = budgets.getStore();
  if (!budget) return null;
  budget.used += count;
  if (budget.used <= budget.limit) return null;
  return new Error(`D1_ERROR: Too many API requests by single worker invocation: more than ${budget.limit} D1 queries (D1_QUERIES_PER_INVOCATION)`);
}
