import { bundles, checkCallCount, stateContext } from '../../bundles.ts';
import { LATEST, optional, ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';
import { DEFAULT_TRACE_OPTIONS, traceCallConfig } from './traceConfig.ts';

/** debug_traceCallMany's trace config: debug_traceCall's, whose state overrides apply before the first call. */
function bundleTraceConfig(value: unknown) {
  const config = traceCallConfig(value);
  // Block overrides belong to each bundle (its blockOverride); Reth ignores these silently.
  if (config.blockOverrides)
    throw new ParamProblem('blockOverrides: give them per bundle, as its blockOverride');
  return config;
}

/**
 * Reth's and Erigon's debug_traceCallMany: bundles of calls traced in order by a geth tracer, each
 * on the state the calls before it left, after the first `transactionIndex` transactions of a block.
 */
export const debug_traceCallMany = method(
  [required(bundles), optional(stateContext), optional(bundleTraceConfig)],
  async ([list, context, config], { services }) => {
    checkCallCount(
      list.reduce((n, bundle) => n + bundle.calls.length, 0),
      services.trace.limits.maxCalls,
    );
    return services.debug.traceCallMany(list, context ?? { block: LATEST }, config ?? DEFAULT_TRACE_OPTIONS);
  },
);
