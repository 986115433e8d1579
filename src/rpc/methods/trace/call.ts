import { blockOverrides, callObject, stateOverrides, traceTypes } from '../../callObject.ts';
import { formatCallTrace } from '../../format/callTrace.ts';
import { blockSelector, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';

/** trace_callMany with one call, plus geth's state and block overrides as parameters 3 and 4. */
export const trace_call = method(
  [
    required(callObject),
    optional(traceTypes),
    optional(blockSelector),
    optional(stateOverrides),
    optional(blockOverrides),
  ],
  async ([call, types, block, state, env], { services }) => {
    const [result] = await services.trace.callMany(
      block ?? LATEST,
      [{ call, types: types ?? { trace: false, stateDiff: false, vmTrace: false } }],
      { ...(state ? { stateOverrides: state } : {}), ...(env ? { blockOverrides: env } : {}) },
    );
    return result ? formatCallTrace(result) : null;
  },
);
