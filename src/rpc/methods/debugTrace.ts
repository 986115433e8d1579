import type { MethodTable } from '../method.ts';
import type { Services } from '../services.ts';
import { debug_chainConfig } from './debug/chainConfig.ts';
import { debug_traceBlockByHash } from './debug/traceBlockByHash.ts';
import { debug_traceBlockByNumber } from './debug/traceBlockByNumber.ts';
import { debug_traceCall } from './debug/traceCall.ts';
import { debug_traceCallMany } from './debug/traceCallMany.ts';
import { debug_traceTransaction } from './debug/traceTransaction.ts';

/** geth's debug tracers (services/debug.ts), and the chain config they run under. */
export const DEBUG_TRACE_METHODS: MethodTable<Services> = {
  debug_chainConfig,
  debug_traceBlockByHash,
  debug_traceBlockByNumber,
  debug_traceCall,
  debug_traceCallMany,
  debug_traceTransaction,
};
