import { blockOverrides, callObject, stateOverrides, traceTypes } from '../../callObject.ts';
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
    return services.trace.callMany(
      block ?? LATEST,
      [{ call, types: types ?? { trace: false, stateDiff: false, vmTrace: false } }],
      { single: true, ...(state ? { stateOverrides: state } : {}), ...(env ? { blockOverrides: env } : {}) },
    );
  },
);
