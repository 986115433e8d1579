import type { CallBundle } from '../core/call.ts';
import { InvalidArgument, refusedBy } from '../core/errors.ts';
import type { BundleContext } from '../services/debug.ts';
import { bundleBlockOverrides, callObject } from './callObject.ts';
import { blockSelector, field, LATEST, ParamProblem, smallQuantity } from './params.ts';

// The parameters debug_traceCallMany and eth_callMany share (Erigon's and Reth's Bundle and
// StateContext).

/** `[{transactions: [call…], blockOverride?}, …]`: at least one bundle; a bundle may have no calls. */
export function bundles(value: unknown): CallBundle[] {
  if (!Array.isArray(value)) throw new ParamProblem('expected an array of bundles');
  if (value.length === 0) throw new ParamProblem('bundles are empty');
  return value.map((element, i) =>
    field(`bundle ${i}`, () => {
      if (typeof element !== 'object' || element === null || Array.isArray(element))
        throw new ParamProblem('expected an object {transactions, blockOverride?}');
      const o = element as Record<string, unknown>;
      const list = o.transactions ?? [];
      if (!Array.isArray(list)) throw new ParamProblem('transactions: expected an array of call objects');
      const calls = list.map((call, j) => field(`transaction ${j}`, () => callObject(call)));
      return o.blockOverride === undefined || o.blockOverride === null
        ? { calls }
        : { calls, blockOverrides: field('blockOverride', () => bundleBlockOverrides(o.blockOverride)) };
    }),
  );
}

/** `{blockNumber?, transactionIndex?}`: latest, after all its transactions, when absent (Reth). */
export function stateContext(value: unknown): BundleContext {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ParamProblem('state context must be an object {blockNumber?, transactionIndex?}');
  const o = value as Record<string, unknown>;
  const block =
    o.blockNumber === undefined || o.blockNumber === null
      ? LATEST
      : field('blockNumber', () => blockSelector(o.blockNumber));
  const index = o.transactionIndex;
  if (index === undefined || index === null || index === -1 || index === '-1') return { block };
  const transactionIndex = field('transactionIndex', () => {
    if (typeof index === 'number') {
      if (!Number.isSafeInteger(index) || index < 0)
        throw new ParamProblem(`expected -1 or a transaction's position, got ${index}`);
      return index;
    }
    return smallQuantity(index);
  });
  return { block, transactionIndex };
}

/** Every call of a request counts against the bound on trace_callMany's calls. */
export function checkCallCount(count: number, maxCalls: number): void {
  if (count > maxCalls)
    throw refusedBy(
      'trace_callmany_calls',
      new InvalidArgument(`too many calls (${count}), at most ${maxCalls}`),
    );
}
