import { hash, optional, required } from '../../params.ts';
import { method } from '../define.ts';
import { DEFAULT_TRACE_OPTIONS, traceConfig } from './traceConfig.ts';

export const debug_traceTransaction = method(
  [required(hash), optional(traceConfig)],
  async ([txHash, config], { services }) =>
    services.debug.traceTransaction(txHash, config ?? DEFAULT_TRACE_OPTIONS),
);
