import type { TypedTransaction } from '@ethereumjs/tx';
import { describeForLog } from '../core/errors.ts';
import type { BlockRef, ChainStore } from '../store/types.ts';

/** How often the store's head is read for blocks another process (an `import`) committed. */
export const HEAD_POLL_MS = 250;

type Listener<T> = (value: T) => void;

/**
 * New canonical blocks and pending transactions, for subscriptions and filters. Blocks are noticed
 * by reading the store's head: at once when this process mined them (the dev chain calls `check`),
 * within HEAD_POLL_MS when another process committed them. Each new block is announced once, in
 * order; a head that moved back (evm_revert) is taken as the new starting point.
 */
export class ChainEvents {
  private last: bigint | null = null;
  private checking: Promise<void> = Promise.resolve();
  private readonly blockListeners = new Set<Listener<BlockRef>>();
  private readonly pendingListeners = new Set<Listener<TypedTransaction>>();
  private readonly rewindListeners = new Set<Listener<bigint>>();
  private timer: NodeJS.Timeout | null = null;
  /** Whether the last poll failed: a failing store is logged once, and again when it recovers. */
  private failing = false;

  constructor(
    private readonly store: ChainStore,
    private readonly log: (line: string) => void = () => {},
  ) {}

  /** Starts watching the head (the first read sets the starting point; nothing before it is announced). */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.poll(), HEAD_POLL_MS);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      await this.check();
      if (this.failing) this.log('head poll recovered: new blocks are announced again');
      this.failing = false;
    } catch (e) {
      if (!this.failing) this.log(`head poll failed (logged once until it recovers): ${describeForLog(e)}`);
      this.failing = true;
    }
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Announces the blocks committed since the last check; concurrent checks run one after another. */
  check(): Promise<void> {
    const run = this.checking.then(() => this.announceNewBlocks());
    // A failed read must not stop later checks.
    this.checking = run.catch(() => {});
    return run;
  }

  onBlock(listener: Listener<BlockRef>): () => void {
    this.blockListeners.add(listener);
    return () => this.blockListeners.delete(listener);
  }

  /** The head moved back to this block (evm_revert); later blocks will be announced anew. */
  onRewind(listener: Listener<bigint>): () => void {
    this.rewindListeners.add(listener);
    return () => this.rewindListeners.delete(listener);
  }

  onPendingTransaction(listener: Listener<TypedTransaction>): () => void {
    this.pendingListeners.add(listener);
    return () => this.pendingListeners.delete(listener);
  }

  /** A transaction entered the pending pool. */
  pending(tx: TypedTransaction): void {
    for (const listener of this.pendingListeners) this.deliver(listener, tx);
  }

  /** One listener's failure is its own: logged, and the others still hear of the event. */
  private deliver<T>(listener: Listener<T>, value: T): void {
    try {
      listener(value);
    } catch (e) {
      this.log(`a chain event listener failed: ${describeForLog(e)}`);
    }
  }

  private async announceNewBlocks(): Promise<void> {
    const head = await this.store.getHead();
    if (head === null) return;
    if (this.last !== null && head.number < this.last) {
      for (const listener of this.rewindListeners) this.deliver(listener, head.number);
    }
    if (this.last === null || head.number <= this.last) {
      this.last = head.number;
      return;
    }
    for (let number = this.last + 1n; number <= head.number; number++) {
      const hash = number === head.number ? head.hash : await this.store.getCanonicalHash(number);
      if (hash === null) break;
      this.last = number;
      for (const listener of this.blockListeners) this.deliver(listener, { number, hash });
    }
  }
}
