import { InvalidArgument, Unavailable, UpstreamError } from '../core/errors.ts';
import { budgetLeft, withUpstreamBudget } from './budget.ts';
import type { RpcCall, RpcOutcome, UpstreamReader, UpstreamStats } from './client.ts';

/**
 * Upstream reads made where the upstream client is not: a worker thread asks its main thread, an API
 * process of `--processes` asks the primary. Only the owner of the client reads, so one read per call
 * is in flight for the whole host (the client joins a call already on its way), the request rate
 * and the concurrency cap hold for all, and the round trips are counted in one place. What the
 * owner answers is checked where it is used (the caller's UpstreamStore), as any upstream answer.
 */

/** What an asker sends: the calls, and what is left of the asking request's budget. */
export interface UpstreamAsk {
  kind: 'upstream-batch';
  calls: RpcCall[];
  /** What is left of the budget of the request that asks, and its whole length, when it has one. */
  budget?: { leftMs: number; ms: number };
}

/** Sends an ask to the owner of the client and resolves with its answer (or its domain error). */
export type Ask = (ask: UpstreamAsk) => Promise<unknown>;

/** An UpstreamReader that asks the owner of the client. */
export class RemoteUpstreamReader implements UpstreamReader {
  private calls = 0;

  constructor(private readonly ask: Ask) {}

  async request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const [outcome] = await this.batch([{ method, params }]);
    if (outcome === undefined) throw new Unavailable('upstream answered nothing');
    if (!outcome.ok) throw new UpstreamError(outcome.error);
    return outcome.result as T;
  }

  async batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    if (calls.length === 0) return [];
    this.calls += calls.length;
    const budget = budgetLeft();
    const answer = await this.ask({
      kind: 'upstream-batch',
      calls: [...calls],
      ...(budget === undefined ? {} : { budget }),
    });
    if (!Array.isArray(answer) || answer.length !== calls.length)
      throw new Error(
        'the owner of the upstream client answered an ask with something else than its outcomes',
      );
    return answer as RpcOutcome[];
  }

  /** Its round trips are the owner's: only the calls asked for are counted here. */
  stats(): UpstreamStats {
    return { roundTrips: 0, calls: this.calls, shared: 0, retries: 0, failures: 0, rateLimited: 0, urls: [] };
  }

  async close(): Promise<void> {}
}

/** The owner's side: reads what an ask asks for with its own reader, within the asker's budget. */
export function answerUpstreamAsk(reader: UpstreamReader, ask: unknown): Promise<RpcOutcome[]> {
  const a = ask as Partial<UpstreamAsk> | null;
  const wellFormed =
    typeof a === 'object' &&
    a !== null &&
    a.kind === 'upstream-batch' &&
    Array.isArray(a.calls) &&
    a.calls.every(
      (c: unknown) =>
        typeof c === 'object' &&
        c !== null &&
        typeof (c as RpcCall).method === 'string' &&
        Array.isArray((c as RpcCall).params),
    ) &&
    (a.budget === undefined ||
      (typeof a.budget === 'object' &&
        a.budget !== null &&
        Number.isFinite(a.budget.leftMs) &&
        Number.isFinite(a.budget.ms)));
  if (!wellFormed) return Promise.reject(new InvalidArgument('not an upstream ask'));
  const calls = a.calls as RpcCall[];
  const budget = a.budget;
  return budget === undefined
    ? reader.batch(calls)
    : // At least a millisecond: a budget spent on the way still gets its error from the client.
      withUpstreamBudget(Math.max(1, budget.leftMs), () => reader.batch(calls), budget.ms);
}
