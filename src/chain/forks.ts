import type { Common } from '@ethereumjs/common';
import { type ChainSpec, makeCommon } from './genesis.ts';

/** A chain's rules by block: one Common per fork, made once and never mutated after. */
export class Forks {
  private readonly commons = new Map<string, Common>();
  private readonly base: Common;
  /** The last block asked about: a call or a session asks for the same block several times. */
  private last: { number: bigint; timestamp: bigint; common: Common } | null = null;

  constructor(spec: ChainSpec) {
    this.base = makeCommon(spec);
  }

  /** The Common for a block, set to its fork. Shared per fork, never mutated after creation. */
  commonAt(number: bigint, timestamp: bigint): Common {
    const last = this.last;
    if (last !== null && last.number === number && last.timestamp === timestamp) return last.common;
    const common = this.lookUp(number, timestamp);
    this.last = { number, timestamp, common };
    return common;
  }

  // ethereumjs's getHardforkBy walks every fork of the chain each time (about 10 µs).
  private lookUp(number: bigint, timestamp: bigint): Common {
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
