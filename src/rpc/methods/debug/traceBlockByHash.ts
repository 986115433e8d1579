import { hash, optional, required } from '../../params.ts';
import { method } from '../define.ts';
import { DEFAULT_TRACE_OPTIONS, traceConfig } from './traceConfig.ts';

export const debug_traceBlockByHash = method(
  [required(hash), optional(traceConfig)],
  async ([blockHash, config], { services }) =>
    services.debug.traceBlock(
      { kind: 'hash', hash: blockHash, requireCanonical: false },
      config ?? DEFAULT_TRACE_OPTIONS,
    ),
);
