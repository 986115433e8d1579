import type { Common } from '@ethereumjs/common';
import { type ChainSpec, makeCommon } from './genesis.ts';

/** A chain's rules by block: one Common per fork, made once and never mutated after. */
export class Forks {
  private readonly commons = new Map<string, Common>();
  private readonly base: Common;

  constructor(spec: ChainSpec) {
    this.base = makeCommon(spec);
  }

  /** The Common for a block, set to its fork. Shared per fork, never mutated after creation. */
  commonAt(number: bigint, timestamp: bigint): Common {
    const fork = this.base.getHardforkBy({ blockNumber: number, timestamp });
    let common = this.commons.get(fork);
    if (!common) {
      common = this.base.copy();
      common.setHardfork(fork);
      this.commons.set(fork, common);
    }
    return common;
  }
}
