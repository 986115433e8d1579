import type { BlockOverrides, StateOverrides } from '../../../core/call.ts';
import { InvalidArgument, refusedBy } from '../../../core/errors.ts';
import { blockOverrides, callObject, stateOverrides, traceTypes } from '../../callObject.ts';
import { blockSelector, field, LATEST, optional, ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';

function calls(value: unknown) {
  if (!Array.isArray(value)) throw new ParamProblem('expected an array of [call, traceTypes]');
  return value.map((element, i) => {
    if (!Array.isArray(element) || element.length < 1 || element.length > 2) {
      throw new ParamProblem(`call ${i}: expected [call] or [call, traceTypes]`);
    }
    return field(`call ${i}`, () => ({ call: callObject(element[0]), types: traceTypes(element[1]) }));
  });
}

/** The optional third parameter: geth's override objects, applied before the first call. */
function options(value: unknown): { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides } {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ParamProblem('options must be an object');
  const o = value as Record<string, unknown>;
  return {
    // Only absence (or null) means "none": `false`, 0 or "" is a mistake to name, not to ignore.
    ...(o.stateOverrides !== undefined && o.stateOverrides !== null
      ? { stateOverrides: stateOverrides(o.stateOverrides) }
      : {}),
    ...(o.blockOverrides !== undefined && o.blockOverrides !== null
      ? { blockOverrides: blockOverrides(o.blockOverrides) }
      : {}),
  };
}

export const trace_callMany = method(
  [required(calls), optional(blockSelector), optional(options)],
  async ([list, block, overrides], { services }) => {
    const { maxCalls } = services.trace.limits;
    if (list.length > maxCalls)
      throw refusedBy(
        'trace_callmany_calls',
        new InvalidArgument(`too many calls (${list.length}), at most ${maxCalls}`),
      );
    return services.trace.callMany(block ?? LATEST, list, overrides ?? {});
  },
);
