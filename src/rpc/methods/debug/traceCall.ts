import { callObject } from '../../callObject.ts';
import { blockSelector, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';
import { DEFAULT_TRACE_OPTIONS, traceCallConfig } from './traceConfig.ts';

/** geth's debug_traceCall: eth_call's semantics (gas cap, fees charged when a price is named), traced. */
export const debug_traceCall = method(
  [required(callObject), optional(blockSelector), optional(traceCallConfig)],
  async ([call, block, config], { services }) =>
    services.debug.traceCall(call, block ?? LATEST, config ?? DEFAULT_TRACE_OPTIONS),
);
