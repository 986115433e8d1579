import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The time one client request may spend waiting for the upstream, over all the reads it makes
 * (`--upstream-budget-ms`). A request that starts a read, and one that joins a read already in
 * flight, both stop waiting when their own budget runs out, so a hanging upstream answers the
 * client within its budget however many reads the request would have made one after the other.
 *
 * The budget travels with the request's async context: src/app.ts opens one per request body, the
 * worker pool answers a worker's reads in the context of the job that asked (src/exec/pool/pool.ts),
 * and an API process of `--processes` sends what is left of it with each read it asks the primary
 * for (src/upstream/remote.ts). A read made outside any request (the head tracker, start-up without
 * one) gets a budget of its own.
 */
export interface Budget {
  /** performance.now() at which it runs out. */
  until: number;
  /** Its whole length, for the error that says it ran out. */
  ms: number;
}

const budgets = new AsyncLocalStorage<Budget>();

/**
 * Runs `work` with `ms` to spend on upstream reads (what is left of a budget of `whole` ms, for a
 * request that began elsewhere); an enclosing budget that ends sooner stays.
 */
export function withUpstreamBudget<T>(ms: number, work: () => Promise<T>, whole = ms): Promise<T> {
  const until = performance.now() + ms;
  const outer = budgets.getStore();
  if (outer !== undefined && outer.until <= until) return work();
  return budgets.run({ until, ms: whole }, work);
}

/** The budget of the request being served here, if any. */
export function currentBudget(): Budget | undefined {
  return budgets.getStore();
}

/** What is left of the current budget (0 when spent) and its whole length; undefined outside any. */
export function budgetLeft(): { leftMs: number; ms: number } | undefined {
  const budget = budgets.getStore();
  return budget === undefined
    ? undefined
    : { leftMs: Math.max(0, Math.floor(budget.until - performance.now())), ms: budget.ms };
}
