import type { BlockHeader } from '@ethereumjs/block';
import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { CallSession } from '../session.ts';

/** What geth's call methods run with: the chain, the limits, the block and a session on its state. */
export interface CallContext {
  chain: ChainReader;
  limits: CallLimits;
  header: BlockHeader;
  session: CallSession;
}
