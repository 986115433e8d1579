import type { ChainService } from '../../services/chain.ts';
import type { Handlers } from '../pool/pool.ts';

/** Worker handlers for the trace_ replay methods (trace_replay*, trace_block, trace_transaction, …). */
export function replayHandlers(_chain: ChainService): Handlers {
  return {};
}
