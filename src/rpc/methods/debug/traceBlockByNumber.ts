import { optional, required } from '../../params.ts';
import { method } from '../define.ts';
import { debugBlockSelector } from './blockParam.ts';
import { DEFAULT_TRACE_OPTIONS, traceConfig } from './traceConfig.ts';

export const debug_traceBlockByNumber = method(
  [required(debugBlockSelector), optional(traceConfig)],
  async ([block, config], { services }) => services.debug.traceBlock(block, config ?? DEFAULT_TRACE_OPTIONS),
);
