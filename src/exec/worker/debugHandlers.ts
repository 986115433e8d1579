import type { ChainService } from '../../services/chain.ts';
import type { Handlers } from '../pool/pool.ts';

/** Worker handlers for geth's debug_trace* methods. */
export function debugHandlers(_chain: ChainService): Handlers {
  return {};
}
