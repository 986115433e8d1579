import { bundles, checkCallCount, stateContext } from '../../bundles.ts';
import { stateOverrides } from '../../callObject.ts';
import { LATEST, optional, ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';

/** Milliseconds, as a JSON integer; 0 (Erigon: no timeout of its own) leaves the server's deadline. */
function timeoutMs(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new ParamProblem('timeout: expected milliseconds (a non-negative integer)');
  return value === 0 ? undefined : value;
}

/**
 * Erigon's eth_callMany: bundles of calls run in order with eth_call's semantics, each on the state
 * the calls before it left; each call answers `{value}` or `{error}`.
 */
export const eth_callMany = method(
  [required(bundles), optional(stateContext), optional(stateOverrides), optional(timeoutMs)],
  async ([list, context, state, timeout], { services }) => {
    checkCallCount(
      list.reduce((n, bundle) => n + bundle.calls.length, 0),
      services.trace.limits.maxCalls,
    );
    return services.execution.callMany(list, context ?? { block: LATEST }, state, timeout);
  },
);
