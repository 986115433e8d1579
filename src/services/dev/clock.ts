import { InvalidArgument, RequestFailed } from '../../core/errors.ts';

/**
 * The latest timestamp a dev block may be given. A header's timestamp is a uint64 (geth refuses
 * anything larger, and a dev chain that stored one could no longer run a transaction), and each
 * block must be later than its parent: the last 2^32 seconds are kept for the blocks after it.
 */
export const MAX_DEV_TIMESTAMP = (1n << 64n) - 1n - (1n << 32n);
const MAX_UINT64 = (1n << 64n) - 1n;

/**
 * The dev chain's clock: the wall clock moved by evm_increaseTime, or the timestamp set for the
 * next block (evm_setNextBlockTimestamp), taken by the block that uses it.
 */
export class DevClock {
  /** Seconds added to the wall clock by evm_increaseTime. */
  offset = 0n;
  private next: bigint | null = null;

  now(): bigint {
    return BigInt(Math.floor(Date.now() / 1000)) + this.offset;
  }

  /** The next block's timestamp if one was set, else the clock. */
  peek(): bigint {
    return this.next ?? this.now();
  }

  /**
   * The timestamp of the block about to be mined on `head` (whose timestamp it must pass), which
   * uses up a set one: past the room kept above MAX_DEV_TIMESTAMP no block can follow.
   */
  take(headTimestamp: bigint | undefined): bigint {
    const timestamp = this.peek();
    if (headTimestamp !== undefined && headTimestamp >= MAX_UINT64 && timestamp <= headTimestamp) {
      throw new RequestFailed(
        `no block can follow one at timestamp ${headTimestamp}, the last a uint64 holds`,
      );
    }
    this.next = null;
    return timestamp;
  }

  /** evm_increaseTime: a move that would pass the latest timestamp a block may have is refused. */
  increase(seconds: bigint): bigint {
    if (this.now() + seconds > MAX_DEV_TIMESTAMP) {
      throw new InvalidArgument(
        `increasing the time by ${seconds} s would pass the latest timestamp a block may have, ${MAX_DEV_TIMESTAMP}`,
      );
    }
    this.offset += seconds;
    return this.offset;
  }

  /** evm_setNextBlockTimestamp: the next block's timestamp (after the head's). */
  setNext(timestamp: bigint, headTimestamp: bigint | undefined): void {
    if (timestamp > MAX_DEV_TIMESTAMP) {
      throw new InvalidArgument(
        `timestamp ${timestamp} is past the latest a block may have, ${MAX_DEV_TIMESTAMP} (a uint64 with room for the blocks after)`,
      );
    }
    if (headTimestamp !== undefined && timestamp <= headTimestamp) {
      throw new RequestFailed(`timestamp ${timestamp} is not after the head block's ${headTimestamp}`);
    }
    this.next = timestamp;
  }

  /** Sets the next block's timestamp without the checks (a run of blocks at an interval). */
  setNextUnchecked(timestamp: bigint | null): void {
    this.next = timestamp;
  }
}
