import type { WorkerPool } from '../exec/pool/pool.ts';
import type { ChainService } from './chain.ts';

/** The trace_ replay methods: mined transactions re-executed and traced (runs in the pool). */
export class ReplayService {
  constructor(
    readonly chain: ChainService,
    readonly pool: WorkerPool,
  ) {}
}
