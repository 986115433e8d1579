import type { WorkerPool } from '../exec/pool/pool.ts';
import type { ChainService } from './chain.ts';

/** geth's debug_trace* methods (runs in the pool). */
export class DebugService {
  constructor(
    readonly chain: ChainService,
    readonly pool: WorkerPool,
  ) {}
}
